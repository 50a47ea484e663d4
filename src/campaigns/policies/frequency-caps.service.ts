import type { ColumnType } from 'kysely';
import type { Db, JsonColumn } from '../../db/database.js';
import { readJson, writeJson } from '../../db/json.js';
import { AppError } from '../../errors.js';
import { parseFrequencyCaps, readFrequencyCaps, type FrequencyCaps } from './frequency-caps.js';

declare module '../../db/database.js' {
  interface ProjectsTable {
    /** The project's frequency caps (migration 0031), or null for none. */
    frequency_caps: ColumnType<JsonColumn | null, JsonColumn | null | undefined, JsonColumn | null>;
  }
}

/** The project's cap rules (rule `frequency-caps`); none when it set none. */
export async function getFrequencyCaps(db: Db, projectId: string): Promise<FrequencyCaps> {
  const row = await db.selectFrom('projects').select('frequency_caps').where('id', '=', projectId).executeTakeFirst();
  if (!row) throw new AppError('not_found', 'PROJECT_NOT_FOUND', `Project ${projectId} does not exist`);
  return readFrequencyCaps(row.frequency_caps === null ? null : readJson(row.frequency_caps));
}

/** Replaces the project's rules (an empty list removes them); sends already made keep counting. */
export async function setFrequencyCaps(db: Db, projectId: string, input: unknown): Promise<FrequencyCaps> {
  const caps = parseFrequencyCaps(input);
  const result = await db
    .updateTable('projects')
    .set({ frequency_caps: caps.rules.length > 0 ? writeJson(caps) : null })
    .where('id', '=', projectId)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0)
    throw new AppError('not_found', 'PROJECT_NOT_FOUND', `Project ${projectId} does not exist`);
  return caps;
}
