import type { AnyKysely } from '../database.js';

/**
 * A campaign's subscription topic (rule `subscription-topics`): a topic key of its project, or null.
 * The index finds the campaigns naming a topic when someone deletes it (a 409 while any does).
 */
export async function up(db: AnyKysely): Promise<void> {
  await db.schema.alterTable('campaigns').addColumn('topic', 'text').execute();
  await db.schema.createIndex('campaigns_topic').on('campaigns').columns(['project_id', 'topic']).execute();
}
