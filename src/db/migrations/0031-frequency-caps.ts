import type { AnyKysely } from '../database.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * Frequency caps and re-eligibility (rules `frequency-caps` and `re-eligibility`): the project's cap
 * rules (`projects.frequency_caps`), a campaign's send policy (`campaigns.send_policy`: `critical`,
 * `tags`, `respect_caps`, `counts_toward_caps`, `reeligibility`; null for the defaults) and the send
 * log, one row per (trigger, user) that holds a slot (with its batch, which gives back the slots it
 * did not use when it closes). `(user_id, sent_at)` is what a cap reads for a
 * slice's users, `(user_id, campaign_id, sent_at)` what re-eligibility reads; a user's rows go with it.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await db.schema.alterTable('projects').addColumn('frequency_caps', t.json).execute();
  await db.schema.alterTable('campaigns').addColumn('send_policy', t.json).execute();
  await db.schema
    .createTable('user_sends')
    .addColumn('trigger_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('campaign_id', 'text', (c) => c.notNull())
    .addColumn('batch_no', 'integer', (c) => c.notNull())
    .addColumn('tags', t.json, (c) => c.notNull())
    .addColumn('counts', 'integer', (c) => c.notNull())
    .addColumn('sent_at', t.epochMs, (c) => c.notNull())
    .addPrimaryKeyConstraint('user_sends_pk', ['trigger_id', 'user_id'])
    .execute();
  await db.schema.createIndex('user_sends_user').on('user_sends').columns(['user_id', 'sent_at']).execute();
  await db.schema
    .createIndex('user_sends_campaign')
    .on('user_sends')
    .columns(['user_id', 'campaign_id', 'sent_at'])
    .execute();
}
