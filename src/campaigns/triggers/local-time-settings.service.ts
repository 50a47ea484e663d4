import type { ColumnType } from 'kysely';
import type { Db, JsonColumn } from '../../db/database.js';
import { readJson, writeJson } from '../../db/json.js';
import { AppError } from '../../errors.js';
import {
  defaultTimeZoneProblem,
  effectiveLocalTime,
  parseProjectLocalTime,
  timeZonePropertyProblem,
  type LocalTimeSettings,
  type ProjectLocalTime,
} from '../../settings/local-time-settings.js';

declare module '../../db/database.js' {
  interface ProjectsTable {
    /** The project's local-time settings (migration 0024), or null for the defaults. */
    local_time: ColumnType<JsonColumn | null, JsonColumn | null | undefined, JsonColumn | null>;
  }
}

async function storedSettings(db: Db, projectId: string): Promise<ProjectLocalTime> {
  const row = await db.selectFrom('projects').select('local_time').where('id', '=', projectId).executeTakeFirst();
  if (!row) throw new AppError('not_found', 'PROJECT_NOT_FOUND', `Project ${projectId} does not exist`);
  return parseProjectLocalTime(row.local_time === null ? null : readJson(row.local_time));
}

/** The settings a local-time trigger of the project uses: its own, else the defaults (`time_zone`, UTC). */
export async function projectLocalTime(db: Db, projectId: string): Promise<LocalTimeSettings> {
  return effectiveLocalTime(await storedSettings(db, projectId));
}

/** The settings in force and which ones the project set (the CLI's `project local-time show`). */
export async function showProjectLocalTime(db: Db, projectId: string) {
  const own = await storedSettings(db, projectId);
  const settings = effectiveLocalTime(own);
  return {
    time_zone_property: settings.timeZoneProperty,
    default_time_zone: settings.defaultTimeZone,
    set_by_project: Object.keys(own).sort(),
  };
}

/** Sets (a string) or removes (`null`) each setting named; triggers already stored keep what they stored. */
export async function setProjectLocalTime(
  db: Db,
  projectId: string,
  changes: { [K in keyof ProjectLocalTime]?: string | null },
): Promise<ProjectLocalTime> {
  const own = await storedSettings(db, projectId);
  const problems = { time_zone_property: timeZonePropertyProblem, default_time_zone: defaultTimeZoneProblem };
  for (const key of ['time_zone_property', 'default_time_zone'] as const) {
    const value = changes[key];
    if (value === undefined) continue;
    if (value === null) {
      delete own[key];
      continue;
    }
    const problem = problems[key](value);
    if (problem) throw new AppError('invalid', 'INVALID_LOCAL_TIME_SETTING', `${key} ${problem}, got "${value}"`);
    own[key] = value;
  }
  await db
    .updateTable('projects')
    .set({ local_time: Object.keys(own).length > 0 ? writeJson(own) : null })
    .where('id', '=', projectId)
    .execute();
  return own;
}
