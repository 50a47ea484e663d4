import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * Opens: the app's report that a push was opened or one of its actions tapped
 * (`POST /api/v1/messages/{message_id}:open`). One row per message, the first report (later ones
 * change nothing), with the message's campaign, trigger and user copied in so counts read this
 * table alone. Two partial indexes serve the counts: opens of a trigger by time, and of a campaign
 * by time; an open of a direct send (no campaign) pays for neither. Retention deletes opens with
 * their deliveries' days, chosen by `received_at` (its own index).
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('message_opens')
    .addColumn('message_id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('project_user_id', 'text')
    .addColumn('campaign_id', 'text')
    .addColumn('trigger_id', 'text')
    .addColumn('action', 'text')
    .addColumn('opened_at', t.epochMs, (c) => c.notNull())
    .addColumn('received_at', t.epochMs, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('message_opens_by_trigger')
    .on('message_opens')
    .columns(['trigger_id', 'opened_at'])
    .where(sql.ref('trigger_id'), 'is not', null)
    .execute();
  await db.schema
    .createIndex('message_opens_by_campaign')
    .on('message_opens')
    .columns(['project_id', 'campaign_id', 'opened_at'])
    .where(sql.ref('campaign_id'), 'is not', null)
    .execute();
  await db.schema.createIndex('message_opens_received').on('message_opens').column('received_at').execute();
}
