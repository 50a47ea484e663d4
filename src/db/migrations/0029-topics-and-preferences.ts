import type { AnyKysely } from '../database.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * Subscription topics and user preferences (rule `subscription-topics`). A topic is a project's, keyed by
 * `key`; its `topic_id` is what a user's choices name, so a topic deleted and made again under the same
 * key starts with nobody's old choice. One preferences row per user (gone with the user): the global
 * `campaign_pushes` choice and `topics`, a JSON object from topic id to `subscribed`/`unsubscribed`
 * (at most one entry per topic of the project), so fan-out reads a slice's choices in one query.
 * `preference_link_keys` holds each project's sealed key for signed preference links (rule
 * `preference-links`), made on the first link.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('topics')
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('topic_id', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('default_subscribed', 'integer', (c) => c.notNull())
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .addColumn('updated_at', t.epochMs, (c) => c.notNull())
    .addPrimaryKeyConstraint('topics_pk', ['project_id', 'key'])
    .execute();
  await db.schema
    .createTable('user_preferences')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('campaign_pushes', 'text', (c) => c.notNull())
    .addColumn('topics', t.json, (c) => c.notNull())
    .addColumn('updated_at', t.epochMs, (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('preference_link_keys')
    .addColumn('project_id', 'text', (c) => c.primaryKey())
    .addColumn('signing_key', 'text', (c) => c.notNull())
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .execute();
}
