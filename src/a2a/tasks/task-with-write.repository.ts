import { sql, type OperationNodeSource } from 'kysely';
import type { Db } from '../../db/database.js';
import { sqlDialect } from '../../db/dialect.js';
import { readJson, writeJson } from '../../db/json.js';
import type { Artifact, Message, TaskStatus } from '../model.js';
import type { TaskKey } from './tasks.repository.js';

/**
 * `insertTask` for a task whose outcome is the write `write` (an `INSERT ... RETURNING`), both in one
 * statement: `WITH result AS (write) INSERT INTO a2a_tasks ... SELECT ... FROM result`. The task's one
 * artifact holds the row the write returned, as a JSON object of its columns. Resolves with the
 * stored artifacts, or `undefined` when the write returned no row (then nothing was written). A key
 * another task of the project holds fails the whole statement with a unique violation, so nothing is
 * written: `insertTask`'s `ON CONFLICT DO NOTHING` would keep the write without its task here.
 * PostgreSQL only (`supportsWritesInWith`): the casts and JSON functions are its own.
 */
export async function insertTaskWithWrite(
  db: Db,
  task: { id: string; projectId: string; contextId: string; skill: string; createdAt: number },
  statuses: TaskStatus[],
  messages: Message[],
  artifact: { artifactId: string; name: string },
  write: OperationNodeSource,
  key?: TaskKey,
): Promise<Artifact[] | undefined> {
  if (!sqlDialect(db).supportsWritesInWith) throw new Error('insertTaskWithWrite needs writes in WITH');
  const last = statuses[statuses.length - 1]!;
  // INSERT ... SELECT gives its values no column types to infer, hence a cast on each.
  const row = sql`select ${task.id}::text, ${task.projectId}::text, ${task.contextId}::text, ${task.skill}::text,
    ${last.state}::text, ${statuses.length}::integer,
    ${last.message === undefined ? null : writeJson(last.message)}::jsonb, ${last.timestamp}::bigint,
    ${writeJson(statuses)}::jsonb, ${writeJson(messages)}::jsonb,
    jsonb_build_array(jsonb_build_object('artifactId', ${artifact.artifactId}::text, 'name', ${artifact.name}::text,
      'parts', jsonb_build_array(jsonb_build_object('data', to_jsonb(result))))),
    ${task.createdAt}::bigint, ${key?.key ?? null}::text, ${key?.hash ?? null}::text
    from result`;
  const inserted = await db
    .with('result', () => write as never)
    .insertInto('a2a_tasks')
    .columns([
      'id',
      'project_id',
      'context_id',
      'skill',
      'state',
      'status_seq',
      'status_message',
      'status_timestamp',
      'status_history',
      'messages',
      'artifacts',
      'created_at',
      'idempotency_key',
      'request_hash',
    ])
    .expression(row)
    .returning('artifacts')
    .executeTakeFirst();
  return inserted && readJson<Artifact[]>(inserted.artifacts);
}
