import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';

/**
 * Drops `deliveries_trigger` (`(trigger_id, status)`, partial on campaign sends, migration 0005): no
 * query reads `deliveries` by trigger (a trigger's sends are read from its ledger,
 * `trigger_deliveries`, and its analytics from the rollup), yet every campaign send paid one more
 * b-tree insert for it. Lookups by message id (the primary key) and retention's
 * `(project_id, created_at)` are unchanged. On PostgreSQL dropping the partitioned index drops it
 * from every partition.
 */
export async function up(db: AnyKysely): Promise<void> {
  await sql`drop index if exists deliveries_trigger`.execute(db);
}
