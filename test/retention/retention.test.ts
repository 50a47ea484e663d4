import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { insertTask } from '../../src/a2a/tasks/tasks.repository.js';
import { dayStart, partitionName } from '../../src/db/partitions.js';
import { DAY_MS } from '../../src/lib/clock.js';
import { enforceRetention } from '../../src/retention/enforce-retention.js';
import { setProjectRetention, showProjectRetention } from '../../src/retention/retention.service.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createUser } from '../campaigns/campaign-helpers.js';
import {
  configureProviders,
  fcmToken,
  pushOverrides,
  registerDevice,
  sendToDevices,
  useFakeProviders,
} from '../push/push-helpers.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { countRows, dayPartitionStarts, isPostgres, movableClock, runRetentionJob } from './retention-helpers.js';

const fakes = useFakeProviders();
type Headers = Record<string, string>;

async function trackEvent(ctx: TestContext, headers: Headers, user: string, name: string): Promise<string> {
  const res = await ctx.inject({
    method: 'POST',
    url: '/api/v1/events',
    headers,
    payload: { project_user_id: user, name },
  });
  if (res.statusCode !== 200) throw new Error(`event: ${res.statusCode} ${res.body}`);
  return res.json<{ event_id: string }>().event_id;
}

async function eventIds(ctx: TestContext, headers: Headers, user: string): Promise<string[]> {
  const res = await ctx.inject({ method: 'GET', url: `/api/v1/users/${user}/events`, headers });
  expect(res.statusCode).toBe(200);
  return res
    .json<{ events: { event_id: string }[] }>()
    .events.map((e) => e.event_id)
    .sort();
}

async function messageStatus(ctx: TestContext, headers: Headers, messageId: string): Promise<number> {
  return (await ctx.inject({ method: 'GET', url: `/api/v1/messages/${messageId}`, headers })).statusCode;
}

describe.each(TEST_DIALECTS)('retention on %s', (dialect) => {
  const { clock, start } = movableClock();
  const ctx = useTestContext(dialect, { overrides: async (db) => ({ ...pushOverrides(fakes)(db), clock }) });

  async function projectWithDevice(tag: string) {
    const { project, secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    await createUser(ctx(), 'u', {}, secret);
    const device = await registerDevice(ctx(), secret, 'u', { fcm_token: fcmToken() });
    const send = async () =>
      (await sendToDevices(ctx(), secret, [{ target: { device_id: device }, title: 't' }]))[0]!.message_id;
    return { projectId: project.project_id, secret, send };
  }

  it('deletes only expired deliveries, events and finished tasks; partitions are made ahead and dropped whole', async () => {
    clock.t = start;
    const p = await projectWithDevice('expiry');
    const oldMessage = await p.send();
    const oldEvent = await trackEvent(ctx(), p.secret, 'u', 'opened');
    const task = (id: string, state: string, at: number) =>
      insertTask(
        ctx().database.db,
        { id, projectId: p.projectId, contextId: 'c', skill: 's', createdAt: at },
        [{ state: state as 'completed', timestamp: at }],
        [],
        [],
      );
    const oldDone = randomUUID();
    const oldWorking = randomUUID();
    await task(oldDone, 'completed', start);
    await task(oldWorking, 'working', start);

    clock.t = start + 2 * DAY_MS; // a partition migration 0016 made ahead
    const newMessage = await p.send();
    const newEvent = await trackEvent(ctx(), p.secret, 'u', 'opened');
    const newDone = randomUUID();
    await task(newDone, 'completed', clock.t);

    // Opens go with their deliveries' days (each stamped when it was reported).
    const open = async (messageId: string) => {
      const res = await ctx().inject({ method: 'POST', url: `/api/v1/messages/${messageId}:open`, headers: p.secret });
      expect(res.statusCode, res.body).toBe(200);
    };
    clock.t = start + 2 * DAY_MS - 60_000;
    await open(oldMessage);
    clock.t = start + 2 * DAY_MS;
    await open(newMessage);
    const opens = async () =>
      (
        await ctx()
          .database.db.selectFrom('message_opens')
          .select('message_id')
          .where('project_id', '=', p.projectId)
          .execute()
      ).map((r) => r.message_id);
    expect((await opens()).sort()).toEqual([oldMessage, newMessage].sort());

    clock.t = start + 32 * DAY_MS - 30_000; // deliveries (30 days) and finished tasks (7) of day 0 expired; events (90) not
    const run = await runRetentionJob(ctx(), clock);
    expect(run.succeeded).toBeGreaterThanOrEqual(1);
    expect(await messageStatus(ctx(), p.secret, oldMessage)).toBe(404);
    expect(await messageStatus(ctx(), p.secret, newMessage)).toBe(200);
    expect(await opens()).toEqual([newMessage]);
    expect(await eventIds(ctx(), p.secret, 'u')).toEqual([oldEvent, newEvent].sort());
    const tasks = await ctx()
      .database.db.selectFrom('a2a_tasks')
      .select('id')
      .where('project_id', '=', p.projectId)
      .execute();
    // The day-2 task is 29 days old, so finished 7-day tasks are all gone; a task still working stays.
    expect(tasks.map((t) => t.id)).toEqual([oldWorking]);
    expect(newDone).not.toBe(oldDone);

    if (isPostgres(ctx().database.db)) {
      const parts = await dayPartitionStarts(ctx().database.db, 'deliveries');
      expect(parts).not.toContain(dayStart(start)); // dropped whole
      expect(parts).toContain(dayStart(start + 2 * DAY_MS));
      for (let d = 0; d <= 3; d++) expect(parts).toContain(dayStart(clock.t) + d * DAY_MS); // made ahead
      expect(await dayPartitionStarts(ctx().database.db, 'events')).toContain(dayStart(start)); // 90 days
      // Sends land in the partitions made ahead, not in the default one.
      expect(await countRows(ctx().database.db, 'deliveries_default')).toBe(0);
      expect(await countRows(ctx().database.db, partitionName('deliveries', start + 2 * DAY_MS))).toBeGreaterThan(0);
    }
  });

  it("deletes conversions with the deliveries' days, by when they were received", async () => {
    clock.t = start;
    const { project } = await ctx().newProject('conversions');
    const row = (n: number, receivedAt: number) => ({
      trigger_id: `t-${project.project_id}-${n}`,
      user_id: 'u',
      goal_index: 0,
      project_id: project.project_id,
      campaign_id: 'c',
      message_id: `m-${n}`,
      event_id: `e-${n}`,
      converted_at: receivedAt,
      received_at: receivedAt,
      revenue: null,
      variant: null,
    });
    await ctx()
      .database.db.insertInto('conversions')
      .values([row(1, start), row(2, start + 2 * DAY_MS)])
      .execute();
    clock.t = start + 32 * DAY_MS - 30_000;
    await runRetentionJob(ctx(), clock);
    const left = await ctx()
      .database.db.selectFrom('conversions')
      .select('message_id')
      .where('project_id', '=', project.project_id)
      .execute();
    expect(left.map((r) => r.message_id)).toEqual(['m-2']);
  });

  it('deletes fired and canceled pending sends (event-triggered) and held sends (quiet hours) with the deliveries; waiting ones stay', async () => {
    clock.t = start;
    const p = await projectWithDevice('pending-sends');
    const campaign = async (name: string, event: string, delay: string) => {
      const res = await ctx().inject({
        method: 'POST',
        url: '/api/v1/campaigns',
        headers: p.secret,
        payload: {
          name,
          status: 'active',
          event_trigger: { event, delay, cancel_on: [{ event: 'purchase' }] },
          message: { title: 'Back?' },
        },
      });
      expect(res.statusCode, res.body).toBe(201);
      return res.json<{ campaign_id: string }>().campaign_id;
    };
    const soon = await campaign('Soon', 'cart', 'PT1M');
    await campaign('Late', 'signup', 'P30D');
    await trackEvent(ctx(), p.secret, 'u', 'cart');
    await trackEvent(ctx(), p.secret, 'u', 'purchase'); // cancels the first cart send (and nothing of Late yet)
    await trackEvent(ctx(), p.secret, 'u', 'cart');
    await trackEvent(ctx(), p.secret, 'u', 'signup');
    clock.t = start + 5 * 60_000;
    await runJobsUntilIdle(ctx().database.db, ctx().herald.jobHandlers, { clock });
    const states = async () =>
      (
        await ctx()
          .database.db.selectFrom('event_pending_sends')
          .select('state')
          .where('project_id', '=', p.projectId)
          .orderBy('state')
          .execute()
      ).map((r) => r.state);
    expect(await states()).toEqual(['canceled', 'fired', 'pending']);
    // Sends held for quiet hours follow the same rule (rows as the quiet-hours gate stores them).
    const db = ctx().database.db;
    const user = await db
      .selectFrom('users')
      .select('id')
      .where('project_id', '=', p.projectId)
      .executeTakeFirstOrThrow();
    await db
      .insertInto('held_sends')
      .values(
        (['fired', 'canceled', 'held'] as const).map((state) => ({
          id: randomUUID(),
          project_id: p.projectId,
          campaign_id: soon,
          user_id: user.id,
          source_trigger_id: randomUUID(),
          due_at: state === 'held' ? start + 40 * DAY_MS : start + 60_000,
          state,
          reason: null,
          trigger_id: null,
          created_at: start,
          updated_at: start,
        })),
      )
      .execute();
    const held = async () =>
      (
        await db
          .selectFrom('held_sends')
          .select('state')
          .where('project_id', '=', p.projectId)
          .orderBy('state')
          .execute()
      ).map((r) => r.state);

    clock.t = start + 29 * DAY_MS; // not yet 30 days
    await runRetentionJob(ctx(), clock);
    expect(await states()).toEqual(['canceled', 'fired', 'pending']);
    expect(await held()).toEqual(['canceled', 'fired', 'held']);
    clock.t = start + 31 * DAY_MS;
    await runRetentionJob(ctx(), clock);
    expect(await states()).toEqual(['pending']);
    expect(await held()).toEqual(['held']);
  });

  it('a project may keep less than the default, never more; bad values are refused', async () => {
    clock.t = start;
    const short = await projectWithDevice('short');
    const normal = await projectWithDevice('normal');
    const defaults = ctx().config.retention.days;
    await setProjectRetention(ctx().database.db, defaults, short.projectId, { events: 10, deliveries: 5 });
    expect(await showProjectRetention(ctx().database.db, defaults, short.projectId)).toEqual({
      deliveries: { days: 5, source: 'project' },
      events: { days: 10, source: 'project' },
      tasks: { days: 7, source: 'default' },
    });
    await expect(setProjectRetention(ctx().database.db, defaults, short.projectId, { events: 91 })).rejects.toThrow(
      /at most the operator's 90 days/,
    );
    for (const bad of [0, -1, 1.5])
      await expect(setProjectRetention(ctx().database.db, defaults, short.projectId, { tasks: bad })).rejects.toThrow(
        /whole number of days/,
      );
    await expect(setProjectRetention(ctx().database.db, defaults, 'nope', { tasks: 1 })).rejects.toThrow(
      /does not exist/,
    );

    const shortOld = await trackEvent(ctx(), short.secret, 'u', 'e');
    const normalOld = await trackEvent(ctx(), normal.secret, 'u', 'e');
    const shortOldMessage = await short.send();
    const normalOldMessage = await normal.send();
    clock.t = start + 8 * DAY_MS;
    const shortNew = await trackEvent(ctx(), short.secret, 'u', 'e');
    clock.t = start + 12 * DAY_MS;
    await runRetentionJob(ctx(), clock);
    expect(await eventIds(ctx(), short.secret, 'u')).toEqual([shortNew]);
    expect(await eventIds(ctx(), normal.secret, 'u')).toEqual([normalOld]);
    expect(await messageStatus(ctx(), short.secret, shortOldMessage)).toBe(404);
    expect(await messageStatus(ctx(), normal.secret, normalOldMessage)).toBe(200);
    expect(shortOld).not.toBe(normalOld);

    // Back to the defaults: nothing more of the project goes.
    await setProjectRetention(ctx().database.db, defaults, short.projectId, { events: null, deliveries: null });
    clock.t = start + 20 * DAY_MS;
    await runRetentionJob(ctx(), clock);
    expect(await eventIds(ctx(), short.secret, 'u')).toEqual([shortNew]);
  });

  it('deletes in chunks of RETENTION_CHUNK_ROWS rows, bounded per run, and finishes on the next run', async () => {
    clock.t = start;
    const { project, secret } = await ctx().newProject('chunks');
    await createUser(ctx(), 'u', {}, secret);
    const res = await ctx().inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: secret,
      payload: { events: Array.from({ length: 30 }, (_, i) => ({ project_user_id: 'u', name: `e${i}` })) },
    });
    expect(res.statusCode).toBe(200);
    const db = ctx().database.db;
    await setProjectRetention(db, ctx().config.retention.days, project.project_id, { events: 1 });
    const settings = { ...ctx().config.retention, chunkRows: 7 };
    const mine = sql`project_id = ${project.project_id}`;
    const at = { now: () => start + 2 * DAY_MS };
    const first = await enforceRetention(db, { settings, clock: at, maxChunksPerRun: 2 });
    expect(first.deleted.events).toBe(14); // two statements of at most 7 rows
    expect(first.unfinished).toBe(true);
    expect(await countRows(db, 'events', mine)).toBe(16);
    const second = await enforceRetention(db, { settings, clock: at });
    expect(second.deleted.events).toBe(16);
    expect(second.unfinished).toBe(false);
    expect(await countRows(db, 'events', mine)).toBe(0);
  });
});
