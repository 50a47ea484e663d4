import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';
import { dialectOf } from '../dialect.js';

/**
 * PostgreSQL storage settings for the tables whose rows are rewritten all day rather than added
 * (docs/operations.md, "Vacuum"): the job queue (claimed, finished, deleted), the request rate-limit
 * and campaign send-rate buckets (one row per key, updated on every request or chunk), and the
 * per-minute trigger counters (updated after every batch). Their live rows are few, so autovacuum's
 * default trigger (20% of the table dead) waits for little and then finds mostly bloat; a fixed
 * threshold vacuums them after a bounded number of dead rows at any size. For the buckets and counters,
 * whose updates change no indexed column, free room in each page (`fillfactor`) lets an update stay
 * in its page without touching the indexes (a HOT update); a job's updates change the columns its
 * partial indexes select on, so it gets no such room. SQLite has no such settings.
 */
const SETTINGS: Record<string, string> = {
  jobs: 'autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_analyze_scale_factor = 0.05',
  rate_limit_buckets:
    'fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0',
  campaign_send_rates:
    'fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0',
  trigger_delivery_counts: 'fillfactor = 70, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000',
};

export async function up(db: AnyKysely): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  for (const [table, settings] of Object.entries(SETTINGS))
    await sql`alter table ${sql.table(table)} set (${sql.raw(settings)})`.execute(db);
}
