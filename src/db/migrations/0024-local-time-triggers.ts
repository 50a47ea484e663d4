import type { AnyKysely } from '../database.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * Local-time triggers (`schedule.in_local_time`): the trigger keeps its local schedule
 * (`local_schedule`, null for any other trigger) and costs one trigger row and one job row until
 * it starts. When it starts, its audience is grouped by each user's time zone into waves, one row
 * per distinct instant (`trigger_waves`), never one per user; each batch names its wave. Projects
 * gain their local-time settings (`local_time`: the user property holding the zone, the default zone).
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await db.schema.alterTable('campaign_triggers').addColumn('local_schedule', t.json).execute();
  await db.schema.alterTable('trigger_batches').addColumn('wave_no', 'integer').execute();
  await db.schema.alterTable('projects').addColumn('local_time', t.json).execute();
  await db.schema
    .createTable('trigger_waves')
    .addColumn('trigger_id', 'text', (c) => c.notNull().references('campaign_triggers.id').onDelete('cascade'))
    .addColumn('wave_no', 'integer', (c) => c.notNull())
    .addColumn('at', t.epochMs, (c) => c.notNull())
    .addColumn('zones', t.json, (c) => c.notNull())
    .addColumn('utc_offset', 'text')
    .addColumn('missed', 'text')
    .addColumn('planned', 'integer', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('trigger_waves_pk', ['trigger_id', 'wave_no'])
    .execute();
}
