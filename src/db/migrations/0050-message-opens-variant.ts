import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';

/**
 * Campaign results (rule `campaign-results`) count opens per experiment variant: each open copies
 * its ledger row's variant (`message_opens.variant`: a variant id, `default`, or null outside an
 * experiment), as it copies the campaign and trigger, so results read opens alone, never the
 * ledger. Existing opens take theirs from the ledger row of their message. The trigger index gains
 * the variant as a trailing column, so opens per (trigger, variant, time bucket) read the index only.
 */
export async function up(db: AnyKysely): Promise<void> {
  await db.schema.alterTable('message_opens').addColumn('variant', 'text').execute();
  await sql`update message_opens set variant = (
      select td.variant from trigger_deliveries td
      where td.trigger_id = message_opens.trigger_id and td.message_id = message_opens.message_id)
    where trigger_id is not null`.execute(db);
  await db.schema.dropIndex('message_opens_by_trigger').execute();
  await db.schema
    .createIndex('message_opens_by_trigger')
    .on('message_opens')
    .columns(['trigger_id', 'opened_at', 'variant'])
    .where(sql.ref('trigger_id'), 'is not', null)
    .execute();
}
