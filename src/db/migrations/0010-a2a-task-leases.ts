import { columnTypes } from '../schema-helpers.js';
import type { AnyKysely } from '../database.js';

/**
 * A staged A2A task's lease: the instance running it renews `lease_until`; once it lapses (the
 * instance died) the reaper fails the task and releases the request's idempotency key.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('a2a_task_leases')
    .addColumn('task_id', 'text', (c) => c.primaryKey().references('a2a_tasks.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('lease_until', t.epochMs, (c) => c.notNull())
    .addColumn('idempotency_scope', 'text')
    .addColumn('idempotency_key', 'text')
    .execute();
  await db.schema.createIndex('a2a_task_leases_due').on('a2a_task_leases').column('lease_until').execute();
}
