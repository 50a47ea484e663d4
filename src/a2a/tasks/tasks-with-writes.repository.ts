import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { readJson } from '../../db/json.js';
import type { Artifact } from '../model.js';
import { taskWriteParams, type TaskWrite } from './task-with-write.repository.js';

/**
 * `insertTaskWithWrite` for several tasks of one skill in one statement: the skill's write for all of
 * them (`SkillWrite.many`) in a CTE, and the tasks, one array per column through `unnest` (one statement
 * text for every count), each joined to the row its own write returned by `match`. The writes must
 * touch distinct rows (their `keys`), and the tasks hold distinct idempotency keys: one statement
 * cannot update a row twice, and a held key fails the whole statement, writing nothing. Resolves, in
 * the items' order, with each task's artifacts, or `undefined` for an item whose write returned no
 * row (nothing of it written). PostgreSQL only, as `insertTaskWithWrite`.
 */
export async function insertTasksWithWrites(db: Db, items: TaskWrite[]): Promise<Array<Artifact[] | undefined>> {
  const many = items[0]!.write.many;
  if (!many) throw new Error('insertTasksWithWrites needs a write for many calls');
  const tasks = items.map(taskWriteParams);
  const column = (name: string) => tasks.map((task) => task[name]);
  const written = many.build(
    db,
    items.map((item) => item.write.params),
  );
  const statement = sql<{ id: string; artifacts: string }>`
    with task as (
      select * from unnest(
        ${column('id')}::text[], ${column('projectId')}::text[], ${column('contextId')}::text[],
        ${column('skill')}::text[], ${column('state')}::text[], ${column('statusSeq')}::integer[],
        ${column('statusMessage')}::text[], ${column('statusTimestamp')}::bigint[],
        ${column('statusHistory')}::text[], ${column('messages')}::text[], ${column('artifactId')}::text[],
        ${column('artifactName')}::text[], ${column('createdAt')}::bigint[], ${column('key')}::text[],
        ${column('keyHash')}::text[], ${items.map((item) => item.write.many?.match)}::text[]
      ) as t(id, project_id, context_id, skill, state, status_seq, status_message, status_timestamp,
        status_history, messages, artifact_id, artifact_name, created_at, idempotency_key, request_hash, match)
    ),
    result as (${written})
    insert into a2a_tasks (id, project_id, context_id, skill, state, status_seq, status_message,
      status_timestamp, status_history, messages, artifacts, created_at, idempotency_key, request_hash)
    select t.id, t.project_id, t.context_id, t.skill, t.state, t.status_seq, t.status_message::jsonb,
      t.status_timestamp, t.status_history::jsonb, t.messages::jsonb,
      jsonb_build_array(jsonb_build_object('artifactId', t.artifact_id, 'name', t.artifact_name,
        'parts', jsonb_build_array(jsonb_build_object('data', to_jsonb(r) - 'match')))),
      t.created_at, t.idempotency_key, t.request_hash
    from task t join result r on r.match = t.match
    returning id, artifacts`;
  const rows = (await db.executeQuery(statement.compile(db))).rows;
  const byTask = new Map(rows.map((row) => [row.id, readJson<Artifact[]>(row.artifacts)]));
  return items.map((item) => byTask.get(item.task.id));
}
