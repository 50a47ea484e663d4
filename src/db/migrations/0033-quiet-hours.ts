import type { AnyKysely } from '../database.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * Quiet hours (rule `quiet-hours`): a campaign's own window (`campaigns.quiet_hours`: null for the
 * project's default, `false` for none), the project's default (`projects.quiet_hours`), a user's
 * do-not-disturb window (`user_quiet_hours`, one row per user who set one), and the held sends: one
 * row per held recipient of a trigger, due when the window ends in that user's zone. `(state, due_at)`
 * is what the held-sends job claims; a held send goes with its user and its campaign.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await db.schema.alterTable('campaigns').addColumn('quiet_hours', t.json).execute();
  await db.schema.alterTable('projects').addColumn('quiet_hours', t.json).execute();
  await db.schema
    .createTable('user_quiet_hours')
    .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('start_time', 'text', (c) => c.notNull())
    .addColumn('end_time', 'text', (c) => c.notNull())
    .addColumn('updated_at', t.epochMs, (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('held_sends')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('campaign_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('source_trigger_id', 'text', (c) => c.notNull())
    .addColumn('due_at', t.epochMs, (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('trigger_id', 'text')
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .addColumn('updated_at', t.epochMs, (c) => c.notNull())
    .addForeignKeyConstraint(
      'held_sends_campaign',
      ['project_id', 'campaign_id'],
      'campaigns',
      ['project_id', 'campaign_id'],
      (fk) => fk.onDelete('cascade'),
    )
    .addUniqueConstraint('held_sends_once', ['source_trigger_id', 'user_id'])
    .execute();
  await db.schema.createIndex('held_sends_due').on('held_sends').columns(['state', 'due_at']).execute();
}
