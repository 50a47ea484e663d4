import { sql } from 'kysely';
import { dialectOf } from '../dialect.js';
import { columnTypes } from '../schema-helpers.js';
import type { AnyKysely } from '../database.js';

/**
 * Campaigns (rule `campaign-management`), their triggers (rule `trigger-status`), the fan-out's
 * per-range batches and the per-(trigger, device) delivery ledger (rule `delivery-guarantee`). See
 * `src/campaigns/README.md` for how the fan-out uses them.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);

  await db.schema
    .createTable('campaigns')
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('campaign_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('api_triggered', 'integer', (c) => c.notNull())
    .addColumn('segment', t.json)
    .addColumn('audience_conditions', t.json)
    .addColumn('default_audience', t.json, (c) => c.notNull())
    .addColumn('message', t.json, (c) => c.notNull())
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .addColumn('updated_at', t.epochMs, (c) => c.notNull())
    .addPrimaryKeyConstraint('campaigns_pk', ['project_id', 'campaign_id'])
    .execute();
  await db.schema
    .createIndex('campaigns_list')
    .on('campaigns')
    .columns(['project_id', 'created_at', 'campaign_id'])
    .execute();

  await db.schema
    .createTable('campaign_triggers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('campaign_id', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    // The campaign as it stood when triggered (segment, conditions with trigger values, templates).
    .addColumn('definition', t.json, (c) => c.notNull())
    .addColumn('audience', t.json, (c) => c.notNull())
    .addColumn('properties', t.json, (c) => c.notNull())
    .addColumn('targets', 'integer', (c) => c.notNull())
    // Audience high-water mark: users (and devices) created after it are not part of a broadcast.
    .addColumn('snapshot_at', t.epochMs, (c) => c.notNull())
    .addColumn('plan_cursor', 'text')
    .addColumn('batches_planned', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('planning_done', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('batches_finished', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('error', 'text')
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .addColumn('started_at', t.epochMs)
    .addColumn('finished_at', t.epochMs)
    .addForeignKeyConstraint(
      'campaign_triggers_campaign',
      ['project_id', 'campaign_id'],
      'campaigns',
      ['project_id', 'campaign_id'],
      (fk) => fk.onDelete('cascade'),
    )
    .execute();
  await db.schema
    .createIndex('campaign_triggers_list')
    .on('campaign_triggers')
    .columns(['project_id', 'campaign_id', 'created_at', 'id'])
    .execute();

  // One row per audience range (broadcast) or per trigger (targets); `counters` once finished.
  await db.schema
    .createTable('trigger_batches')
    .addColumn('trigger_id', 'text', (c) => c.notNull().references('campaign_triggers.id').onDelete('cascade'))
    .addColumn('batch_no', 'integer', (c) => c.notNull())
    .addColumn('after_user_id', 'text')
    .addColumn('upto_user_id', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('counters', t.json)
    .addColumn('updated_at', t.epochMs, (c) => c.notNull())
    .addPrimaryKeyConstraint('trigger_batches_pk', ['trigger_id', 'batch_no'])
    .execute();

  // The send-side checkpoint: at most one row per (trigger, device), written once the provider answered.
  await db.schema
    .createTable('trigger_deliveries')
    .addColumn('trigger_id', 'text', (c) => c.notNull().references('campaign_triggers.id').onDelete('cascade'))
    .addColumn('device_id', 'text', (c) => c.notNull())
    .addColumn('batch_no', 'integer', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text')
    .addColumn('failure_reason', 'text')
    .addColumn('token_action', 'text')
    .addColumn('detail', 'text')
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .addPrimaryKeyConstraint('trigger_deliveries_pk', ['trigger_id', 'device_id'])
    .execute();

  // Keyset paging of a project's users by id: the fan-out's ranges and batches.
  await db.schema.createIndex('users_project_id').on('users').columns(['project_id', 'id']).execute();
  if (dialectOf(db) === 'postgres') {
    // Segment leaves compile `eq` to `properties @> {...}`, which this index serves (counts, dry runs).
    await sql`create index users_properties_gin on users using gin (properties jsonb_path_ops)`.execute(db);
  }
}
