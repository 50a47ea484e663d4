import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * Recurring campaign schedules (rule `recurring-schedules`): one row per schedule, whose
 * `next_occurrence_at` its one pending `campaign.schedule-occurrence` job fires. A trigger an
 * occurrence created names its schedule and occurrence instant; the unique index makes that one
 * trigger per (schedule, occurrence) whatever the number of instances, restarts or job retries.
 * Deleting the campaign deletes its schedules; the triggers keep the schedule id as history.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('campaign_schedules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('campaign_id', 'text', (c) => c.notNull())
    .addColumn('cron', 'text', (c) => c.notNull())
    .addColumn('time_zone', 'text', (c) => c.notNull())
    .addColumn('in_local_time', 'integer', (c) => c.notNull())
    // Null: each occurrence uses the campaign's default audience as it stands then.
    .addColumn('audience', t.json)
    .addColumn('properties', t.json, (c) => c.notNull())
    .addColumn('starts_at', t.epochMs)
    .addColumn('ends_at', t.epochMs)
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('next_occurrence_at', t.epochMs)
    // Bumped at each enqueue of the schedule's job (its key and payload carry it): a job whose
    // sequence is not the schedule's is stale (paused, resumed or already fired) and does nothing.
    .addColumn('job_seq', 'integer', (c) => c.notNull())
    .addColumn('occurrences', 'integer', (c) => c.notNull())
    .addColumn('skipped', 'integer', (c) => c.notNull())
    .addColumn('last_occurrence_at', t.epochMs)
    .addColumn('last_trigger_id', 'text')
    .addColumn('last_skip_reason', 'text')
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .addColumn('updated_at', t.epochMs, (c) => c.notNull())
    .addForeignKeyConstraint(
      'campaign_schedules_campaign',
      ['project_id', 'campaign_id'],
      'campaigns',
      ['project_id', 'campaign_id'],
      (fk) => fk.onDelete('cascade'),
    )
    .execute();
  await db.schema
    .createIndex('campaign_schedules_list')
    .on('campaign_schedules')
    .columns(['project_id', 'campaign_id', 'created_at', 'id'])
    .execute();

  await db.schema.alterTable('campaign_triggers').addColumn('schedule_id', 'text').execute();
  await db.schema.alterTable('campaign_triggers').addColumn('occurrence_at', t.epochMs).execute();
  // Partial: triggers sent by hand pay nothing for it.
  await db.schema
    .createIndex('campaign_triggers_occurrence')
    .on('campaign_triggers')
    .columns(['schedule_id', 'occurrence_at'])
    .unique()
    .where(sql.ref('schedule_id'), 'is not', null)
    .execute();
}
