import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';
import { dialectOf } from '../dialect.js';

/**
 * A2A SendMessage keys (rule `a2a-idempotency`) live on the task they started instead of in `idempotency_keys`: a
 * unique `(project_id, idempotency_key)` on `a2a_tasks` makes the task insert itself the claim, so
 * a create-user writes two rows instead of three. `idempotency_key` is the scope's prefix (`h:`
 * header key, `m:` messageId) and the key; `request_hash` tells a replay from a reuse; the key
 * expires 24 h after the task's `created_at`, and a task still running holds it `in progress`.
 * The A2A keys already stored move onto their tasks, so a replay after the upgrade still replays.
 */
export async function up(db: AnyKysely): Promise<void> {
  await db.schema.alterTable('a2a_tasks').addColumn('idempotency_key', 'text').execute();
  await db.schema.alterTable('a2a_tasks').addColumn('request_hash', 'text').execute();
  await db.schema
    .createIndex('a2a_tasks_idempotency')
    .unique()
    .on('a2a_tasks')
    .columns(['project_id', 'idempotency_key'])
    .execute();

  const taskIdOf =
    dialectOf(db) === 'postgres'
      ? sql`(k.response_body::jsonb ->> 'taskId')`
      : sql`json_extract(k.response_body, '$.taskId')`;
  const prefixed = sql`(case k.scope when 'a2a.send' then 'h:' else 'm:' end) || k.idempotency_key`;
  // Completed keys name their task in the stored response; keys in progress are found by the lease.
  await sql`
    update a2a_tasks set idempotency_key = moved.key, request_hash = moved.hash
    from (
      select ${taskIdOf} as task_id, k.project_id, ${prefixed} as key, k.request_hash as hash
        from idempotency_keys k
       where k.scope in ('a2a.send', 'a2a.send.message-id') and k.state = 'completed'
      union all
      select l.task_id, k.project_id, ${prefixed}, k.request_hash
        from idempotency_keys k
        join a2a_task_leases l on l.project_id = k.project_id and l.idempotency_scope = k.scope
                              and l.idempotency_key = k.idempotency_key
       where k.scope in ('a2a.send', 'a2a.send.message-id') and k.state = 'in_progress'
    ) as moved
    where a2a_tasks.id = moved.task_id and a2a_tasks.project_id = moved.project_id`.execute(db);
  await sql`delete from idempotency_keys where scope in ('a2a.send', 'a2a.send.message-id')`.execute(db);
}
