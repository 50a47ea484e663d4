import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * Retention finds a campaign's expired ledger rows through their trigger, not through an index of
 * the ledger: `trigger_deliveries_retention` (`(project_id, trigger_created_at)`, migration 0016)
 * cost every campaign send one more b-tree insert, yet a trigger's rows all share those two values.
 * Retention now takes a project's finished triggers older than its cutoff from `campaign_triggers`
 * (one row per trigger, not per device) and deletes each one's rows by the ledger's primary key
 * prefix. `ledger_expired_at` marks a trigger whose rows are gone, and the partial index holds only
 * the triggers not yet marked, so a pass never walks the triggers it emptied before. On PostgreSQL
 * dropping the partitioned index drops it from every partition.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await sql`drop index if exists trigger_deliveries_retention`.execute(db);
  await db.schema.alterTable('campaign_triggers').addColumn('ledger_expired_at', t.epochMs).execute();
  await db.schema
    .createIndex('campaign_triggers_ledger_retention')
    .on('campaign_triggers')
    .columns(['project_id', 'created_at'])
    .where(sql.ref('ledger_expired_at'), 'is', null)
    .execute();
}
