import type { AnyKysely } from '../database.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * Scheduled triggers: `scheduled_at` is the instant a trigger given `schedule.at` fires (null for
 * one sent at once). The trigger waits in state `scheduled` with its `campaign.plan` job due then,
 * so a scheduled trigger costs one row here and one in `jobs` until it fires.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await db.schema.alterTable('campaign_triggers').addColumn('scheduled_at', t.epochMs).execute();
}
