import type { AnyKysely } from '../database.js';

/**
 * The send log's age index: retention deletes `user_sends` rows older than any rule can need
 * (rules `frequency-caps`, `re-eligibility`), found by `sent_at`. And a project's customer-hosted
 * preference page (`projects.preference_page_url`, rule `preference-links`): null for Herald's own.
 */
export async function up(db: AnyKysely): Promise<void> {
  await db.schema.createIndex('user_sends_sent_at').on('user_sends').column('sent_at').execute();
  await db.schema.alterTable('projects').addColumn('preference_page_url', 'text').execute();
}
