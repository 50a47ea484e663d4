import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createCampaignJobHandlers, type FanoutDeps } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { setProjectLocalTime } from '../../src/campaigns/triggers/local-time-settings.service.js';
import { triggerCampaign } from '../../src/campaigns/triggers/trigger.service.js';
import { enqueueJob } from '../../src/jobs/jobs.js';
import { systemClock } from '../../src/lib/clock.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';
import { rpc, v1Message } from '../a2a/a2a-helpers.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import { createCampaign, createUser, FAILED, json, trigger, triggerOk, triggerStatus } from './campaign-helpers.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const at = (text: string) => Date.parse(text);

interface WaveView {
  wave: number;
  at: string;
  utc_offset: string | null;
  zones: string[];
  missed: string | null;
  planned: number;
  sent: number;
  state: string;
}

describe.each(TEST_DIALECTS)('local-time triggers on %s', (dialect) => {
  const fakes = useFakeProviders();
  // Herald's clock and the stand-ins' (so their tokens are issued in the same time), set by each test.
  let now = Date.now();
  let realTime = false;
  const clock = { now: () => (realTime ? Date.now() : now) };
  const ctx = useTestContext(dialect, {
    overrides: async (database) => ({ ...pushOverrides(fakes)(database), clock }),
  });
  beforeEach(() => {
    fakes().fcm.now = () => now;
  });
  afterEach(() => {
    fakes().fcm.now = () => Date.now();
    realTime = false;
  });

  const runJobs = (options: Partial<FanoutDeps> = {}) =>
    runJobsUntilIdle(
      ctx().database.db,
      createCampaignJobHandlers({ push: ctx().herald.push, templates: ctx().herald.templates, clock, ...options }),
      { clock },
    );
  const acceptedCount = (token: string) =>
    fakes().fcm.recorder.items.filter((i) => i.status === 200 && i.token === token).length;
  const sent = (tokens: Record<string, string>) =>
    Object.entries(tokens)
      .filter(([, token]) => acceptedCount(token) > 0)
      .map(([user]) => user)
      .sort();

  /** A project with one user (and device) per entry: its properties, the zone under `time_zone` unless given. */
  async function world(tag: string, users: Record<string, Record<string, unknown>>, tokenPrefix = '') {
    const { secret, project } = await ctx().newProject(tag);
    const projectId = project.project_id;
    await configureProviders(ctx(), secret, fakes());
    const tokens: Record<string, string> = {};
    for (const [id, properties] of Object.entries(users)) {
      await createUser(ctx(), id, { plan: 'pro', ...properties }, secret);
      tokens[id] = fcmToken(tokenPrefix);
      await registerDevice(ctx(), secret, id, { fcm_token: tokens[id] });
    }
    const campaignId = await createCampaign(ctx(), { segment: { property: 'plan', op: 'eq', value: 'pro' } }, secret);
    return { secret, projectId, tokens, campaignId };
  }
  type World = Awaited<ReturnType<typeof world>>;
  const local = (w: World, schedule: Record<string, unknown>, audience: unknown = { broadcast: true }) =>
    triggerOk(ctx(), w.campaignId, { audience, schedule: { in_local_time: true, ...schedule } }, w.secret);
  const status = (w: World, triggerId: string) => triggerStatus(ctx(), w.campaignId, triggerId, w.secret);
  const waves = async (w: World, triggerId: string) => (await status(w, triggerId)).waves as WaveView[];
  const control = (w: World, triggerId: string, verb: string, body?: unknown) =>
    json(ctx(), 'POST', `/api/v1/campaigns/${w.campaignId}/triggers/${triggerId}:${verb}`, body ?? {}, w.secret);

  it('spring forward: a 02:30 the clocks skip goes at 03:00 local (New York and Paris)', async () => {
    now = at('2027-03-13T12:00:00Z');
    const w = await world('gap', { ny: { time_zone: 'America/New_York' } });
    const ny = await local(w, { at: '2027-03-14T02:30' });
    const st = await status(w, ny);
    // Scheduled until the first zone (UTC+14) reaches 02:30: 2027-03-13T12:30Z.
    expect(st).toMatchObject({
      state: 'scheduled',
      scheduled_at: '2027-03-13T12:30:00.000Z',
      schedule: { at: '2027-03-14T02:30:00', in_local_time: true, missed: 'skip', time_zone_property: 'time_zone' },
      waves: [],
    });
    now = at('2027-03-13T12:30:00Z');
    await runJobs();
    expect(await waves(w, ny)).toEqual([
      {
        wave: 0,
        at: '2027-03-14T07:00:00.000Z', // 03:00 EDT
        utc_offset: '-04:00',
        zones: ['America/New_York'],
        missed: null,
        planned: 1,
        sent: 0,
        state: 'pending',
      },
    ]);
    expect((await status(w, ny)).state).toBe('running');
    now = at('2027-03-14T06:59:00Z');
    await runJobs();
    expect(sent(w.tokens)).toEqual([]);
    now = at('2027-03-14T07:00:00Z');
    await runJobs();
    expect(sent(w.tokens)).toEqual(['ny']);
    expect(await status(w, ny)).toMatchObject({ state: 'completed', counters: { accepted: 1 } });
    expect((await waves(w, ny))[0]).toMatchObject({ sent: 1, state: 'done' });

    now = at('2027-03-27T12:00:00Z');
    const p = await world('gap-paris', { paris: { time_zone: 'Europe/Paris' } });
    const paris = await local(p, { at: '2027-03-28T02:30' });
    now = at('2027-03-28T00:59:00Z');
    await runJobs();
    expect((await waves(p, paris))[0]).toMatchObject({ at: '2027-03-28T01:00:00.000Z', utc_offset: '+02:00' });
    expect(sent(p.tokens)).toEqual([]);
    now = at('2027-03-28T01:00:00Z');
    await runJobs();
    expect(sent(p.tokens)).toEqual(['paris']);
  });

  it('fall back: a 01:30 the clocks show twice goes at the first one (New York and Paris)', async () => {
    now = at('2027-10-30T12:00:00Z');
    const w = await world('fold', { ny: { time_zone: 'America/New_York' }, paris: { time_zone: 'Europe/Paris' } });
    const ny = await local(w, { at: '2027-11-07T01:30' }, { targets: [{ project_user_id: 'ny' }] });
    const paris = await local(w, { at: '2027-10-31T02:30' }, { targets: [{ project_user_id: 'paris' }] });
    now = at('2027-10-31T00:30:00Z');
    await runJobs();
    expect((await waves(w, paris))[0]).toMatchObject({ at: '2027-10-31T00:30:00.000Z', utc_offset: '+02:00' });
    expect(sent(w.tokens)).toEqual(['paris']);
    now = at('2027-11-07T05:30:00Z'); // 01:30 EDT, an hour before 01:30 EST
    await runJobs();
    expect((await waves(w, ny))[0]).toMatchObject({ at: '2027-11-07T05:30:00.000Z', utc_offset: '-04:00', sent: 1 });
    expect(sent(w.tokens)).toEqual(['ny', 'paris']);
    expect(acceptedCount(w.tokens.ny!)).toBe(1);
  });

  it('zones with half-hour offsets, one wave per distinct instant, each sent when its time comes', async () => {
    now = at('2027-01-14T12:00:00Z');
    const w = await world('half', {
      kolkata: { time_zone: 'Asia/Kolkata' },
      adelaide: { time_zone: 'Australia/Adelaide' },
      colombo: { time_zone: 'Asia/Colombo' }, // +05:30 too: the same wave as Kolkata
      ny: { time_zone: 'America/New_York' },
    });
    const id = await local(w, { at: '2027-01-15T09:00' });
    now = at('2027-01-14T19:00:00Z'); // 09:00 at UTC+14
    await runJobs();
    expect((await waves(w, id)).map((v) => [v.at, v.utc_offset, v.zones, v.planned])).toEqual([
      ['2027-01-14T22:30:00.000Z', '+10:30', ['Australia/Adelaide'], 1],
      ['2027-01-15T03:30:00.000Z', '+05:30', ['Asia/Colombo', 'Asia/Kolkata'], 2],
      ['2027-01-15T14:00:00.000Z', '-05:00', ['America/New_York'], 1],
    ]);
    now = at('2027-01-14T22:30:00Z');
    await runJobs();
    expect(sent(w.tokens)).toEqual(['adelaide']);
    now = at('2027-01-15T03:30:00Z');
    await runJobs();
    expect(sent(w.tokens)).toEqual(['adelaide', 'colombo', 'kolkata']);
    expect((await status(w, id)).state).toBe('running');
    now = at('2027-01-15T14:00:00Z');
    await runJobs();
    expect(sent(w.tokens)).toEqual(['adelaide', 'colombo', 'kolkata', 'ny']);
    const st = await status(w, id);
    expect(st).toMatchObject({ state: 'completed', counters: { in_segment: 4, eligible: 4, accepted: 4 } });
    expect((st.waves as WaveView[]).map((v) => v.sent)).toEqual([1, 2, 1]);
    // Each wave's devices are recorded once.
    const ledger = await sql<{
      n: number;
    }>`select count(*) as n from trigger_deliveries where trigger_id = ${id}`.execute(ctx().database.db);
    expect(Number(ledger.rows[0]!.n)).toBe(4);
  });

  it('missed: skip (default), send_now and next_day for users whose local time had passed at creation', async () => {
    // 12:00Z: 09:00 has passed in Paris (08:00Z) and Tokyo (00:00Z), not in New York (14:00Z).
    now = at('2027-01-15T12:00:00Z');
    const users = {
      paris: { time_zone: 'Europe/Paris' },
      tokyo: { time_zone: 'Asia/Tokyo' },
      ny: { time_zone: 'America/New_York' },
    };
    const skipW = await world('skip', users);
    const nowW = await world('send-now', users);
    const nextW = await world('next-day', users);
    const skip = await local(skipW, { at: '2027-01-15T09:00' });
    const sendNow = await local(nowW, { at: '2027-01-15T09:00', missed: 'send_now' });
    const nextDay = await local(nextW, { at: '2027-01-15T09:00', missed: 'next_day' });
    expect((await status(skipW, skip)).schedule).toMatchObject({ missed: 'skip' });
    await runJobs();
    expect(sent(skipW.tokens)).toEqual([]);
    expect(sent(nowW.tokens)).toEqual(['paris', 'tokyo']);
    expect(sent(nextW.tokens)).toEqual([]);
    expect((await waves(skipW, skip)).map((v) => v.zones)).toEqual([['America/New_York']]);
    expect((await waves(nowW, sendNow)).map((v) => [v.at, v.missed, v.utc_offset, v.zones])).toEqual([
      ['2027-01-15T12:00:00.000Z', 'send_now', null, ['Asia/Tokyo', 'Europe/Paris']],
      ['2027-01-15T14:00:00.000Z', null, '-05:00', ['America/New_York']],
    ]);
    expect((await waves(nextW, nextDay)).map((v) => [v.at, v.missed, v.zones])).toEqual([
      ['2027-01-15T14:00:00.000Z', null, ['America/New_York']],
      ['2027-01-16T00:00:00.000Z', 'next_day', ['Asia/Tokyo']],
      ['2027-01-16T08:00:00.000Z', 'next_day', ['Europe/Paris']],
    ]);
    now = at('2027-01-15T14:00:00Z');
    await runJobs();
    expect(sent(skipW.tokens)).toEqual(['ny']);
    expect(sent(nowW.tokens)).toEqual(['ny', 'paris', 'tokyo']);
    expect(sent(nextW.tokens)).toEqual(['ny']);
    expect((await status(skipW, skip)).state).toBe('completed');
    now = at('2027-01-16T08:00:00Z');
    await runJobs();
    expect(sent(nextW.tokens)).toEqual(['ny', 'paris', 'tokyo']);
    expect((await status(nextW, nextDay)).state).toBe('completed');
  });

  it('zone: the property, else fallback_time_zone, else the project default; an invalid zone falls back; the property is a setting', async () => {
    now = at('2027-01-14T12:00:00Z');
    const w = await world('zones', {
      tokyo: { time_zone: 'Asia/Tokyo' },
      none: {},
      bad: { time_zone: 'Mars/Olympus_Mons' },
      number: { time_zone: 5 },
      custom: { tz: 'America/Los_Angeles', time_zone: 'Asia/Tokyo' },
    });
    const withFallback = await local(w, { at: '2027-01-15T09:00', fallback_time_zone: 'Europe/Paris' });
    // The project's default zone, and the property holding a user's zone, are its settings.
    await setProjectLocalTime(ctx().database.db, w.projectId, {
      default_time_zone: 'America/Sao_Paulo',
      time_zone_property: 'tz',
    });
    const withDefault = await local(w, { at: '2027-01-15T09:00' });
    now = at('2027-01-14T19:00:00Z');
    await runJobs();
    expect((await waves(w, withFallback)).map((v) => [v.zones, v.planned])).toEqual([
      [['Asia/Tokyo'], 2],
      [['Europe/Paris'], 3],
    ]);
    // Read from `tz` now: only `custom` has it; every other user gets the project's default zone.
    expect((await status(w, withDefault)).schedule).toMatchObject({
      time_zone_property: 'tz',
      default_time_zone: 'America/Sao_Paulo',
      fallback_time_zone: null,
    });
    expect((await waves(w, withDefault)).map((v) => [v.at, v.zones, v.planned])).toEqual([
      ['2027-01-15T12:00:00.000Z', ['America/Sao_Paulo'], 4],
      ['2027-01-15T17:00:00.000Z', ['America/Los_Angeles'], 1],
    ]);
    now = at('2027-01-15T12:00:00Z');
    await runJobs();
    expect(sent(w.tokens)).toEqual(['bad', 'custom', 'none', 'number', 'tokyo']);
    now = at('2027-01-15T17:00:00Z');
    await runJobs();
    // Each device once per trigger: two triggers, five devices.
    expect(Object.values(w.tokens).map(acceptedCount)).toEqual([2, 2, 2, 2, 2]);
    // A bad setting is refused with the reason.
    await expect(
      setProjectLocalTime(ctx().database.db, w.projectId, { default_time_zone: 'Nowhere/Else' }),
    ).rejects.toThrow(/default_time_zone must be an IANA time zone/);
    await expect(setProjectLocalTime(ctx().database.db, w.projectId, { time_zone_property: 'a"b' })).rejects.toThrow(
      /time_zone_property must be a user property name/,
    );
  });

  it('cancel during a wave stops its remaining chunks and every later wave; :reschedule is refused', async () => {
    now = at('2027-01-14T12:00:00Z');
    // Every send is held 1.5 s by the stand-in, one device per chunk: the cancel lands during the first.
    const w = await world(
      'cancel',
      {
        p1: { time_zone: 'Europe/Paris' },
        p2: { time_zone: 'Europe/Paris' },
        p3: { time_zone: 'Europe/Paris' },
        ny: { time_zone: 'America/New_York' },
      },
      'slow-1500-',
    );
    const id = await local(w, { at: '2027-01-15T09:00' });
    const moved = await control(w, id, 'reschedule', { schedule: { at: '2027-01-16T09:00:00Z' } });
    expect(moved.statusCode).toBe(409);
    expect(moved.json<{ error: string }>().error).toMatch(/sends in each user's local time/);
    now = at('2027-01-15T08:00:00Z');
    const running = runJobs({ sendChunk: 1, chunksInFlight: 1 });
    await waitFor(() => fakes().fcm.delayed === 1, { what: 'the first send of the Paris wave under way' });
    const res = await control(w, id, 'cancel');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ state: 'canceled', error: 'canceled by request' });
    await running;
    expect(sent(w.tokens)).toHaveLength(1);
    now = at('2027-01-16T12:00:00Z');
    await runJobs();
    expect(sent(w.tokens)).toHaveLength(1);
    const st = await status(w, id);
    expect(st).toMatchObject({ state: 'canceled', counters: { accepted: 1 } });
    expect((st.waves as WaveView[]).map((v) => [v.zones, v.sent, v.state])).toEqual([
      [['Europe/Paris'], 1, 'done'],
      [['America/New_York'], 0, 'pending'],
    ]);
    const pending = await sql<{
      n: number;
    }>`select count(*) as n from jobs where job_key = ${`campaign.plan:${id}`} and state = 'pending'`.execute(
      ctx().database.db,
    );
    expect(Number(pending.rows[0]!.n)).toBe(0);
  });

  it('exactly once: two runners, and a wave batch run again, never send a device twice', async () => {
    now = at('2027-01-14T12:00:00Z');
    const users = Object.fromEntries(
      Array.from({ length: 6 }, (_, i) => [`u${i}`, { time_zone: i % 2 ? 'Asia/Kolkata' : 'Europe/Paris' }]),
    );
    const w = await world('once', users);
    const id = await local(w, { at: '2027-01-15T09:00' });
    now = at('2027-01-15T09:00:00Z');
    // Two runners claim the same queue at once; the batches are small so there are several per wave.
    await Promise.all([runJobs({ batchUsers: 2 }), runJobs({ batchUsers: 2 })]);
    expect(sent(w.tokens)).toHaveLength(6);
    // Every batch run again (as after a lost lease): the ledger keeps each device at one send.
    const db = ctx().database.db;
    await db.updateTable('trigger_batches').set({ state: 'queued' }).where('trigger_id', '=', id).execute();
    const batches = await db.selectFrom('trigger_batches').select('batch_no').where('trigger_id', '=', id).execute();
    for (const b of batches)
      await enqueueJob(db, 'campaign.send-batch', { triggerId: id, batchNo: Number(b.batch_no) }, { clock });
    // And the plan job once more: the waves are planned already.
    await enqueueJob(db, 'campaign.plan', { triggerId: id }, { clock });
    await Promise.all([runJobs({ batchUsers: 2 }), runJobs({ batchUsers: 2 })]);
    expect(Object.values(w.tokens).map(acceptedCount)).toEqual([1, 1, 1, 1, 1, 1]);
    const st = await status(w, id);
    expect((st.waves as WaveView[]).map((v) => v.zones)).toEqual([['Asia/Kolkata'], ['Europe/Paris']]);
    expect(st.progress).toMatchObject({ batches_planned: batches.length, planning_done: true });
  });

  it('refuses bad local-time schedules with 400 and the reason, storing nothing', async () => {
    now = at('2027-01-15T12:00:00Z');
    const w = await world('bad', { u: { time_zone: 'UTC' } });
    const cases: Array<[unknown, string, RegExp]> = [
      [{ at: '2027-12-24T09:00:00+01:00', in_local_time: true }, 'INVALID_SCHEDULE', /without an offset/],
      [{ at: '2027-12-24T09:00Z', in_local_time: true }, 'INVALID_SCHEDULE', /without an offset/],
      [{ at: '2027-02-30T09:00', in_local_time: true }, 'INVALID_SCHEDULE', /local date-time/],
      [{ at: '2027-12-24', in_local_time: true }, 'INVALID_SCHEDULE', /local date-time/],
      [{ in_local_time: true }, 'INVALID_SCHEDULE', /schedule/],
      [{ at: '2027-12-24T09:00', in_local_time: 'yes' }, 'INVALID_SCHEDULE', /in_local_time: expected true or false/],
      [{ at: '2027-12-24T09:00', in_local_time: true, missed: 'later' }, 'INVALID_SCHEDULE', /missed/],
      [
        { at: '2027-12-24T09:00', in_local_time: true, fallback_time_zone: 'Mars/Base' },
        'INVALID_SCHEDULE',
        /fallback_time_zone/,
      ],
      [
        { at: '2027-12-24T09:00', in_local_time: true, fallback_time_zone: '+01:00' },
        'INVALID_SCHEDULE',
        /fallback_time_zone/,
      ],
      [{ at: '2027-12-24T09:00:00Z', missed: 'skip' }, 'INVALID_SCHEDULE', /only with "in_local_time": true/],
      [{ at: '2027-12-24T09:00' }, 'INVALID_SCHEDULE', /"in_local_time": true/],
      // Passed in every zone (UTC-12 reached it at 2027-01-14T21:00Z).
      [{ at: '2027-01-14T09:00', in_local_time: true }, 'SCHEDULE_IN_PAST', /has passed in every time zone/],
      [{ at: '2027-01-14T09:00', in_local_time: true, missed: 'send_now' }, 'SCHEDULE_IN_PAST', /every time zone/],
      [{ at: '2028-01-16T09:00', in_local_time: true }, 'SCHEDULE_TOO_FAR', /more than a year ahead/],
    ];
    for (const [schedule, reason, message] of cases) {
      const res = await trigger(ctx(), w.campaignId, { schedule }, { headers: w.secret });
      expect(res.statusCode, JSON.stringify(schedule)).toBe(400);
      expect(res.body).toBe(FAILED);
      expect(res.headers['x-error-reason'], JSON.stringify(schedule)).toBe(reason);
      const dry = await trigger(ctx(), w.campaignId, { schedule }, { headers: w.secret, dryRun: true });
      expect(dry.statusCode, JSON.stringify(schedule)).toBe(400);
      expect(dry.headers['x-error-reason'], JSON.stringify(schedule)).toBe(reason);
      // The message says which rule it breaks (the A2A skill and the CLI show it).
      await expect(
        triggerCampaign({ db: ctx().database.db, clock }, w.projectId, w.campaignId, { schedule }),
        JSON.stringify(schedule),
      ).rejects.toThrow(message);
    }
    // Yesterday's local time with next_day is still to come in most zones: accepted.
    expect(await local(w, { at: '2027-01-14T09:00', missed: 'next_day' })).toBeTruthy();
    const list = await json(ctx(), 'GET', `/api/v1/campaigns/${w.campaignId}/triggers`, undefined, w.secret);
    expect(list.json<{ triggers: unknown[] }>().triggers).toHaveLength(1);
  });

  it('the A2A trigger-campaign skill takes the same local-time schedule, and says why it refuses one', async () => {
    now = at('2027-01-14T12:00:00Z');
    const w = await world('a2a', { u: { time_zone: 'Asia/Kolkata' } });
    const send = (data: Record<string, unknown>) =>
      rpc(ctx(), 'SendMessage', { message: v1Message(data) }, { version: '1.0', key: w.secret['x-service-api-key']! });
    const schedule = { at: '2027-01-15T09:00', in_local_time: true, missed: 'next_day' };
    const made = (
      await send({ skill: 'trigger-campaign', campaignId: w.campaignId, audience: { broadcast: true }, schedule })
    ).json().result.task;
    expect(made.status.state).toBe('TASK_STATE_COMPLETED');
    const { triggerId } = made.artifacts[0].parts[0].data as { triggerId: string };
    expect(await status(w, triggerId)).toMatchObject({
      state: 'scheduled',
      schedule: { at: '2027-01-15T09:00:00', in_local_time: true, missed: 'next_day' },
    });
    const bad = (
      await send({
        skill: 'trigger-campaign',
        campaignId: w.campaignId,
        schedule: { at: '2027-01-15T09:00:00+05:30', in_local_time: true },
      })
    ).json();
    expect(bad.error.code).toBe(-32602);
    expect(bad.error.message).toMatch(/with in_local_time, at is a wall-clock time without an offset/);
  });

  it('documents in_local_time, the schedule and the waves in the OpenAPI document, with an example', async () => {
    const doc = (await ctx().inject({ method: 'GET', url: '/openapi.json' })).json<{
      paths: Record<string, unknown>;
      components: { schemas: Record<string, { properties: Record<string, unknown> }> };
    }>();
    const triggerPath = JSON.stringify(doc.paths['/api/v1/campaigns/{campaign_id}:trigger']);
    expect(triggerPath).toContain('"in_local_time":true');
    expect(triggerPath).toContain('"next_day"');
    expect(JSON.stringify(doc.paths['/api/v1/campaigns/{campaign_id}/triggers/{trigger_id}'])).toContain(
      '#/components/schemas/Trigger',
    );
    const statusSchema = doc.components.schemas.Trigger!;
    expect(Object.keys(statusSchema.properties)).toEqual(expect.arrayContaining(['schedule', 'waves']));
    expect(JSON.stringify(statusSchema.properties.waves)).toContain('"utc_offset"');
  });

  it('end to end in real time: the stand-in receives the message when the user’s wall clock shows `at`', async () => {
    realTime = true;
    const real = { now: () => Date.now() };
    fakes().fcm.now = () => Date.now();
    const w = await world('real', { kolkata: { time_zone: 'Asia/Kolkata' } });
    // Two seconds from now on a Kolkata wall clock.
    const due = Date.now() + 2000;
    const wall = new Date(due + 5.5 * HOUR).toISOString().slice(0, 19);
    const id = await local(w, { at: wall });
    const handlers = createCampaignJobHandlers({
      push: ctx().herald.push,
      templates: ctx().herald.templates,
      clock: systemClock,
    });
    await waitFor(
      async () => {
        await runJobsUntilIdle(ctx().database.db, handlers, { clock: real });
        return acceptedCount(w.tokens.kolkata!) === 1;
      },
      { what: 'the Kolkata wave sent', timeoutMs: 15_000 },
    );
    const item = fakes().fcm.recorder.items.find((i) => i.token === w.tokens.kolkata)!;
    expect(item.at).toBeGreaterThanOrEqual(Math.floor(due / 1000) * 1000);
    expect(await status(w, id)).toMatchObject({ state: 'completed', counters: { accepted: 1 } });
  });
});
