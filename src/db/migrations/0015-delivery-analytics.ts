import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';

/**
 * Delivery analytics (issue 17): the ledger row names its device's provider, so counts by provider
 * need no join, and one covering index per trigger answers the totals and the time series by an
 * index-only range scan (`trigger_id`, then time, then the grouped columns). A campaign's analytics
 * reach its triggers through `campaign_triggers_list`. Rows written before this migration take the
 * provider of their delivery record; render skips of that time had none and stay NULL.
 */
export async function up(db: AnyKysely): Promise<void> {
  await db.schema.alterTable('trigger_deliveries').addColumn('provider', 'text').execute();
  await sql`update trigger_deliveries set provider = (
      select d.provider from deliveries d where d.message_id = trigger_deliveries.message_id)
    where message_id is not null`.execute(db);
  await db.schema
    .createIndex('trigger_deliveries_analytics')
    .on('trigger_deliveries')
    .columns(['trigger_id', 'created_at', 'status', 'provider', 'failure_reason'])
    .execute();
}
