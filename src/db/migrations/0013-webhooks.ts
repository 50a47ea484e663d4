import type { AnyKysely } from '../database.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * Webhooks (src/webhooks): a project's subscriptions to notices. `secret` (and during a
 * rotation `previous_secret`) hold the Standard Webhooks signing secret sealed with the server's
 * secret key; `failing_since` is when the current run of failed deliveries began (auto-disable).
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('webhook_subscriptions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('events', t.json, (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_until', t.epochMs)
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('disabled_reason', 'text')
    .addColumn('failing_since', t.epochMs)
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .addColumn('updated_at', t.epochMs, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('webhook_subscriptions_project')
    .on('webhook_subscriptions')
    .columns(['project_id', 'created_at'])
    .execute();
}
