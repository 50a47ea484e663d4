import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';
import { dialectOf } from '../dialect.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * Conversion goals (rule `conversion-goals`): the campaign's `conversion_goals` (JSON, null for
 * none), and `conversions`, one row per (send, goal) that converted: the send is a trigger's send to
 * a user, so the primary key `(trigger_id, user_id, goal_index)` is the once-per-goal-per-send rule
 * and serves a trigger's counts by its prefix; `conversions_by_campaign` serves a campaign's counts
 * by time; retention chooses by `received_at`. `variant` is the send's (rule `campaign-experiments`);
 * a user of the control group converts on the ledger row that recorded them, which has no message.
 *
 * Attribution reads a user's accepted campaign sends of the last days when one of their events
 * matches a goal: `trigger_deliveries_to_user` on `(user_id, created_at)`, partial on accepted rows
 * (failed and skipped outcomes are no send to attribute to). Every accepted ledger row pays one more
 * b-tree insert for it; without it a user's sends mean reading every trigger of the campaign. On
 * PostgreSQL the index is made on every partition of the ledger. The control group's records
 * (`failure_reason` CONTROL) have a small partial index of their own, so conversions of the control
 * measure the lift.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  const real = dialectOf(db) === 'postgres' ? 'double precision' : 'real';
  await db.schema.alterTable('campaigns').addColumn('conversion_goals', t.json).execute();
  await db.schema
    .createTable('conversions')
    .addColumn('trigger_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('goal_index', 'integer', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('campaign_id', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text')
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('converted_at', t.epochMs, (c) => c.notNull())
    .addColumn('received_at', t.epochMs, (c) => c.notNull())
    .addColumn('revenue', sql.raw(real))
    .addColumn('variant', 'text')
    .addPrimaryKeyConstraint('conversions_pk', ['trigger_id', 'user_id', 'goal_index'])
    .execute();
  await db.schema
    .createIndex('conversions_by_campaign')
    .on('conversions')
    .columns(['project_id', 'campaign_id', 'converted_at'])
    .execute();
  await db.schema.createIndex('conversions_received').on('conversions').column('received_at').execute();
  await db.schema
    .createIndex('trigger_deliveries_to_user')
    .on('trigger_deliveries')
    .columns(['user_id', 'created_at'])
    .where(sql.ref('status'), '=', sql.lit('DELIVERY_RESULT_STATUS_ACCEPTED'))
    .execute();
  await db.schema
    .createIndex('trigger_deliveries_control_to_user')
    .on('trigger_deliveries')
    .columns(['user_id', 'created_at'])
    .where(sql.ref('failure_reason'), '=', sql.lit('CONTROL'))
    .execute();
}
