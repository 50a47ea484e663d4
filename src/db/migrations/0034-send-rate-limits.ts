import type { AnyKysely } from '../database.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * Send-rate limits (rule `send-rate-limits`): a campaign's `max_sends_per_minute` (null: unlimited)
 * and its shared pacing row, one per rate-limited campaign: the theoretical arrival time (`tat_us`,
 * microseconds) of a GCRA token bucket that every instance's send loops claim chunks from.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await db.schema.alterTable('campaigns').addColumn('max_sends_per_minute', 'integer').execute();
  await db.schema
    .createTable('campaign_send_rates')
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('campaign_id', 'text', (c) => c.notNull())
    .addColumn('tat_us', t.epochMs, (c) => c.notNull())
    .addPrimaryKeyConstraint('campaign_send_rates_pk', ['project_id', 'campaign_id'])
    .addForeignKeyConstraint(
      'campaign_send_rates_campaign',
      ['project_id', 'campaign_id'],
      'campaigns',
      ['project_id', 'campaign_id'],
      (fk) => fk.onDelete('cascade'),
    )
    .execute();
}
