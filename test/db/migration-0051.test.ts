import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createCampaign } from '../../src/campaigns/campaigns.service.js';
import { insertTrigger } from '../../src/campaigns/triggers/triggers.repository.js';
import type { AnyKysely, Db } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { systemClock } from '../../src/lib/clock.js';
import { createProject } from '../../src/projects/projects.service.js';
import { databaseBefore } from '../helpers/database-before.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

const MIGRATION = '0051-outcome-rollups';
const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 1, 9, 0, 0);

/** A project, a campaign and two of its triggers, made as the app makes them. */
async function seed(db: Db): Promise<{ projectId: string; campaignId: string; triggers: [string, string] }> {
  const projectId = (await createProject(db, systemClock, 'm0051')).project_id;
  const { campaignId } = await createCampaign(db, systemClock, projectId, {
    name: 'm0051',
    status: 'active',
    api_triggered: true,
    message: { title: 'x' },
  });
  const triggers: [string, string] = ['t-one', 't-two'];
  for (const id of triggers)
    await insertTrigger(db, {
      id,
      projectId,
      campaignId,
      definition: { campaignName: 'm0051', segment: null, audienceConditions: null, message: { title: 'x' } },
      audience: { broadcast: true },
      properties: {},
      targets: 0,
      createdAt: T0,
    });
  return { projectId, campaignId, triggers };
}

const open = (
  projectId: string,
  campaignId: string | null,
  triggerId: string | null,
  id: string,
  at: number,
  variant: string | null,
) => ({
  message_id: id,
  project_id: projectId,
  project_user_id: `u-${id}`,
  campaign_id: campaignId,
  trigger_id: triggerId,
  variant,
  action: null,
  opened_at: at,
  received_at: at,
});

const conversion = (
  projectId: string,
  campaignId: string,
  triggerId: string,
  user: string,
  goal: number,
  at: number,
  revenue: number | null,
  variant: string | null,
) => ({
  trigger_id: triggerId,
  user_id: user,
  goal_index: goal,
  project_id: projectId,
  campaign_id: campaignId,
  message_id: `m-${user}`,
  event_id: `e-${user}-${goal}`,
  converted_at: at,
  received_at: at,
  revenue,
  variant,
});

const rows = async (db: AnyKysely) => ({
  opens: (
    await db
      .selectFrom('trigger_open_counts')
      .select(['trigger_id', 'minute', 'variant'])
      .select((eb) => eb.fn.sum<number>('n').as('n'))
      .groupBy(['trigger_id', 'minute', 'variant'])
      .orderBy('trigger_id')
      .orderBy('minute')
      .orderBy('variant')
      .execute()
  ).map((r) => ({ ...r, minute: Number(r.minute), n: Number(r.n) })),
  conversions: (
    await db
      .selectFrom('trigger_conversion_counts')
      .select(['trigger_id', 'minute', 'goal_index', 'variant'])
      .select((eb) => [eb.fn.sum<number>('n').as('n'), eb.fn.sum<number>('revenue').as('revenue')])
      .groupBy(['trigger_id', 'minute', 'goal_index', 'variant'])
      .orderBy('trigger_id')
      .orderBy('minute')
      .orderBy('goal_index')
      .orderBy('variant')
      .execute()
  ).map((r) => ({
    ...r,
    minute: Number(r.minute),
    goal_index: Number(r.goal_index),
    n: Number(r.n),
    revenue: Number(r.revenue),
  })),
});

describe.each(TEST_DIALECTS)('migration 0051 on %s', (dialect) => {
  let destroy: (() => Promise<void>) | undefined;
  afterEach(async () => destroy?.());

  it('backfills the open and conversion rollups from the rows there, and keeps them as rows are inserted', async () => {
    const before = await databaseBefore(dialect, MIGRATION);
    destroy = before.destroy;
    const db = before.handle.db;
    const { projectId, campaignId, triggers } = await seed(db);
    const [one, two] = triggers;
    await db
      .insertInto('message_opens')
      .values([
        open(projectId, campaignId, one, 'o1', T0 + 5_000, 'a'),
        open(projectId, campaignId, one, 'o2', T0 + 59_999, 'a'),
        open(projectId, campaignId, one, 'o3', T0 + 30_000, null),
        open(projectId, campaignId, one, 'o4', T0 + MINUTE, 'a'),
        open(projectId, campaignId, two, 'o5', T0 + 10 * MINUTE + 1, 'b'),
        // A direct send's open, and one of a trigger since deleted: counted nowhere.
        open(projectId, null, null, 'o6', T0, null),
        open(projectId, campaignId, 'gone', 'o7', T0, 'a'),
      ])
      .execute();
    await db
      .insertInto('conversions')
      .values([
        conversion(projectId, campaignId, one, 'u1', 0, T0 + 1_000, 10.5, 'a'),
        conversion(projectId, campaignId, one, 'u2', 0, T0 + 2_000, null, 'a'),
        conversion(projectId, campaignId, one, 'u2', 1, T0 + 2_000, null, 'a'),
        conversion(projectId, campaignId, two, 'u3', 0, T0 + 3 * MINUTE, 4.25, null),
      ])
      .execute();

    await migrateToLatest(db);

    const backfilled = await rows(db as AnyKysely);
    expect(backfilled.opens).toEqual([
      { trigger_id: one, minute: T0, variant: '', n: 1 },
      { trigger_id: one, minute: T0, variant: 'a', n: 2 },
      { trigger_id: one, minute: T0 + MINUTE, variant: 'a', n: 1 },
      { trigger_id: two, minute: T0 + 10 * MINUTE, variant: 'b', n: 1 },
    ]);
    expect(backfilled.conversions).toEqual([
      { trigger_id: one, minute: T0, goal_index: 0, variant: 'a', n: 2, revenue: 10.5 },
      { trigger_id: one, minute: T0, goal_index: 1, variant: 'a', n: 1, revenue: 0 },
      { trigger_id: two, minute: T0 + 3 * MINUTE, goal_index: 0, variant: '', n: 1, revenue: 4.25 },
    ]);

    // After it, the triggers count what is inserted; a repeat (kept first row) and a gone trigger count nothing.
    await db
      .insertInto('message_opens')
      .values(open(projectId, campaignId, one, 'o8', T0 + 1_000, 'a'))
      .execute();
    for (const id of ['o1', 'o8'])
      await db
        .insertInto('message_opens')
        .values(open(projectId, campaignId, one, id, T0 + 1_000, 'a'))
        .onConflict((oc) => oc.column('message_id').doNothing())
        .execute();
    await db
      .insertInto('message_opens')
      .values(open(projectId, campaignId, 'gone', 'o9', T0, 'a'))
      .execute();
    await db
      .insertInto('conversions')
      .values(conversion(projectId, campaignId, two, 'u4', 0, T0 + 3 * MINUTE + 5, 0.75, null))
      .execute();
    await db
      .insertInto('conversions')
      .values(conversion(projectId, campaignId, one, 'u1', 0, T0, 99, 'a'))
      .onConflict((oc) => oc.columns(['trigger_id', 'user_id', 'goal_index']).doNothing())
      .execute();
    const after = await rows(db as AnyKysely);
    expect(after.opens[1]).toEqual({ trigger_id: one, minute: T0, variant: 'a', n: 3 });
    expect(after.opens).toHaveLength(4);
    expect(after.conversions[0]).toEqual(backfilled.conversions[0]);
    expect(after.conversions[2]).toEqual({
      trigger_id: two,
      minute: T0 + 3 * MINUTE,
      goal_index: 0,
      variant: '',
      n: 2,
      revenue: 5,
    });

    // PostgreSQL: folding deletes partials all day, so autovacuum runs after a fixed number of dead rows.
    if (dialect === 'postgres') {
      const { rows: options } = await sql<{ relname: string; reloptions: string[] }>`
        select relname, reloptions from pg_class where relnamespace = current_schema()::regnamespace
          and relname in ('trigger_open_counts', 'trigger_conversion_counts')`.execute(db);
      expect(options).toHaveLength(2);
      for (const o of options) expect(o.reloptions, o.relname).toContain('autovacuum_vacuum_threshold=5000');
    }

    // A trigger's rollup rows go with it.
    await db.deleteFrom('campaign_triggers').where('id', '=', one).execute();
    const left = await rows(db as AnyKysely);
    expect(left.opens.map((r) => r.trigger_id)).toEqual([two]);
    expect(left.conversions.map((r) => r.trigger_id)).toEqual([two]);
  });
});
