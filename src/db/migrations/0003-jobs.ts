import { sql } from 'kysely';
import { columnTypes } from '../schema-helpers.js';
import type { AnyKysely } from '../database.js';

/**
 * The durable job queue (rule `transactional-jobs`). Rows move pending → running → succeeded | dead (or back to pending
 * on a retry). Finished rows are deleted by the runner's cleanup after a retention period.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('payload', t.json, (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('run_at', t.epochMs, (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('max_attempts', 'integer', (c) => c.notNull().defaultTo(25))
    .addColumn('locked_by', 'text')
    .addColumn('locked_until', t.epochMs)
    .addColumn('last_error', 'text')
    .addColumn('job_key', 'text')
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .addColumn('updated_at', t.epochMs, (c) => c.notNull())
    .execute();

  // Partial indexes stay small: finished rows never enter the claim's index (pending by run_at) or
  // the lease rescue's (running by lease end). Queries name the state as a literal, not a bound
  // parameter, because SQLite only uses a partial index whose condition it can see in the query.
  await db.schema
    .createIndex('jobs_pending_run_at')
    .on('jobs')
    .column('run_at')
    .where(sql.ref('state'), '=', 'pending')
    .execute();
  await db.schema
    .createIndex('jobs_running_locked_until')
    .on('jobs')
    .column('locked_until')
    .where(sql.ref('state'), '=', 'running')
    .execute();
  // At most one unfinished job per key; enqueue relies on this for de-duplication under concurrency.
  await db.schema
    .createIndex('jobs_unfinished_job_key')
    .on('jobs')
    .column('job_key')
    .unique()
    .where(sql<boolean>`state in ('pending', 'running')`)
    .execute();
  // Cleanup deletes finished rows past their retention, one statement per state.
  await db.schema
    .createIndex('jobs_succeeded_updated_at')
    .on('jobs')
    .column('updated_at')
    .where(sql.ref('state'), '=', 'succeeded')
    .execute();
  await db.schema
    .createIndex('jobs_dead_updated_at')
    .on('jobs')
    .column('updated_at')
    .where(sql.ref('state'), '=', 'dead')
    .execute();
}
