import type { AnyKysely } from '../database.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * Event-triggered campaigns (rule `event-triggered-campaigns`): a campaign's `event_trigger`, and the
 * pending sends its matching events create, one row each, due at an instant. A pending send goes
 * with its campaign and its user (`ON DELETE CASCADE`); `(state, due_at)` is what the due-sends job
 * claims in batches; `(user_id, state)` is what a `cancel_on` event looks up.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await db.schema.alterTable('campaigns').addColumn('event_trigger', t.json).execute();
  await db.schema
    .createTable('event_pending_sends')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('campaign_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_name', 'text', (c) => c.notNull())
    .addColumn('event_properties', t.json, (c) => c.notNull())
    .addColumn('event_timestamp', t.epochMs, (c) => c.notNull())
    .addColumn('due_at', t.epochMs, (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('trigger_id', 'text')
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .addColumn('updated_at', t.epochMs, (c) => c.notNull())
    .addForeignKeyConstraint(
      'event_pending_sends_campaign',
      ['project_id', 'campaign_id'],
      'campaigns',
      ['project_id', 'campaign_id'],
      (fk) => fk.onDelete('cascade'),
    )
    .addUniqueConstraint('event_pending_sends_once', ['project_id', 'campaign_id', 'event_id'])
    .execute();
  await db.schema
    .createIndex('event_pending_sends_due')
    .on('event_pending_sends')
    .columns(['state', 'due_at'])
    .execute();
  await db.schema
    .createIndex('event_pending_sends_user')
    .on('event_pending_sends')
    .columns(['user_id', 'state'])
    .execute();
  await db.schema
    .createIndex('event_pending_sends_list')
    .on('event_pending_sends')
    .columns(['project_id', 'campaign_id', 'created_at', 'id'])
    .execute();
}
