import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import {
  CANCELED_BY_SCHEDULE_PAUSE,
  MAX_SCHEDULES_PER_CAMPAIGN,
} from '../../src/campaigns/schedules/schedules.service.js';
import { planJobKey } from '../../src/campaigns/triggers/trigger-schedule.js';
import type { JobHandler } from '../../src/jobs/job-types.js';
import { manualClock } from '../helpers/clock.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createCampaign, json } from './campaign-helpers.js';

type Headers = Record<string, string>;
type Schedule = {
  schedule_id: string;
  state: string;
  next_occurrence_at: string | null;
  occurrences: number;
  skipped: number;
  last_occurrence: { at: string; trigger_id: string | null; skipped_reason: string | null } | null;
} & Record<string, unknown>;
type TriggerSummary = {
  trigger_id: string;
  state: string;
  scheduled_at: string | null;
  schedule_id?: string;
  occurrence_at?: string;
};

describe.each(TEST_DIALECTS)('recurring schedules on %s', (dialect) => {
  // Herald's clock, which each test sets: the routes, the occurrence job and the queue all read it.
  const clock = manualClock(Date.parse('2026-11-28T12:00:00Z'));
  const ctx = useTestContext(dialect, { overrides: { clock } });
  const handler = () =>
    ctx().herald.jobHandlers['campaign.schedule-occurrence'] as JobHandler<'campaign.schedule-occurrence'>;
  /** Runs the due occurrence jobs (only them: the triggers they create stay queued). */
  const runOccurrences = () =>
    runJobsUntilIdle(ctx().database.db, { 'campaign.schedule-occurrence': handler() }, { clock });

  async function world(tag: string, campaign: Record<string, unknown> = {}) {
    const { secret } = await ctx().newProject(tag);
    const campaignId = await createCampaign(ctx(), campaign, secret);
    return { secret, campaignId, base: `/api/v1/campaigns/${campaignId}/schedules` };
  }
  type World = Awaited<ReturnType<typeof world>>;

  const post = (w: World, path: string, body?: unknown, headers: Headers = w.secret) =>
    json(ctx(), 'POST', `${w.base}${path}`, body ?? {}, headers);
  async function create(w: World, body: Record<string, unknown>): Promise<Schedule> {
    const res = await post(w, '', body);
    if (res.statusCode !== 201) throw new Error(`create schedule: ${res.statusCode} ${res.body}`);
    return res.json<Schedule>();
  }
  async function get(w: World, id: string): Promise<Schedule> {
    const res = await json(ctx(), 'GET', `${w.base}/${id}`, undefined, w.secret);
    if (res.statusCode !== 200) throw new Error(`get schedule: ${res.statusCode} ${res.body}`);
    return res.json<Schedule>();
  }
  async function triggers(w: World): Promise<TriggerSummary[]> {
    const res = await json(ctx(), 'GET', `/api/v1/campaigns/${w.campaignId}/triggers`, undefined, w.secret);
    return res.json<{ triggers: TriggerSummary[] }>().triggers;
  }
  /** Moves the clock to the schedule's next occurrence and runs it; returns the schedule after. */
  async function fireNext(w: World, id: string): Promise<Schedule> {
    const next = (await get(w, id)).next_occurrence_at;
    if (next === null) throw new Error('no next occurrence');
    clock.set(Date.parse(next));
    await runOccurrences();
    return get(w, id);
  }
  const pendingJobs = async (scheduleId: string) =>
    (
      await sql<{
        job_key: string;
      }>`select job_key from jobs where job_key like ${`campaign.schedule-occurrence:${scheduleId}:%`} and state = 'pending'`.execute(
        ctx().database.db,
      )
    ).rows.map((r) => r.job_key);

  it('creates a schedule (201, active, its next occurrence) and fires one trigger per occurrence', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z')); // a Saturday
    const w = await world('weekly');
    const made = await create(w, {
      cron: '0 9 * * 1',
      time_zone: 'europe/paris',
      audience: { broadcast: true },
      properties: { digest: 'weekly' },
    });
    expect(made).toMatchObject({
      campaign_id: w.campaignId,
      cron: '0 9 * * 1',
      time_zone: 'Europe/Paris',
      in_local_time: false,
      audience: { broadcast: true },
      properties: { digest: 'weekly' },
      starts_at: null,
      ends_at: null,
      state: 'active',
      next_occurrence_at: '2026-11-30T08:00:00.000Z',
      occurrences: 0,
      skipped: 0,
      last_occurrence: null,
      created_at: '2026-11-28T12:00:00.000Z',
    });
    expect(await get(w, made.schedule_id)).toEqual(made);
    const list = await json(ctx(), 'GET', w.base, undefined, w.secret);
    expect(list.json()).toEqual({ schedules: [made], next_cursor: null });
    // O(1) until it fires: the schedule row and one job.
    expect(await pendingJobs(made.schedule_id)).toEqual([`campaign.schedule-occurrence:${made.schedule_id}:1`]);

    clock.set(Date.parse('2026-11-30T07:59:59Z'));
    await runOccurrences();
    expect(await triggers(w)).toEqual([]);

    const after = await fireNext(w, made.schedule_id);
    const [first] = await triggers(w);
    expect(first).toMatchObject({
      state: 'queued',
      properties: { digest: 'weekly' },
      schedule_id: made.schedule_id,
      occurrence_at: '2026-11-30T08:00:00.000Z',
    });
    expect(after).toMatchObject({
      state: 'active',
      next_occurrence_at: '2026-12-07T08:00:00.000Z',
      occurrences: 1,
      last_occurrence: { at: '2026-11-30T08:00:00.000Z', trigger_id: first!.trigger_id, skipped_reason: null },
    });
    // The trigger's status names the schedule and occurrence too.
    const status = await json(
      ctx(),
      'GET',
      `/api/v1/campaigns/${w.campaignId}/triggers/${first!.trigger_id}`,
      undefined,
      w.secret,
    );
    expect(status.json()).toMatchObject({ schedule_id: made.schedule_id, occurrence_at: '2026-11-30T08:00:00.000Z' });
    expect(await pendingJobs(made.schedule_id)).toEqual([`campaign.schedule-occurrence:${made.schedule_id}:2`]);
    // Running again at the same instant fires nothing more.
    await runOccurrences();
    expect(await triggers(w)).toHaveLength(1);
    // A trigger sent by hand has no schedule fields.
    const manual = await json(ctx(), 'POST', `/api/v1/campaigns/${w.campaignId}:trigger`, {}, w.secret);
    const manualStatus = await json(
      ctx(),
      'GET',
      `/api/v1/campaigns/${w.campaignId}/triggers/${manual.json<{ trigger_id: string }>().trigger_id}`,
      undefined,
      w.secret,
    );
    expect(manualStatus.json()).not.toHaveProperty('schedule_id');
  });

  /** The instants of the next `n` occurrences, fired one after the other. */
  async function occurrences(w: World, body: Record<string, unknown>, n: number): Promise<string[]> {
    const made = await create(w, body);
    for (let i = 0; i < n; i++) await fireNext(w, made.schedule_id);
    const fired = (await triggers(w)).filter((t) => t.schedule_id === made.schedule_id);
    return fired.map((t) => t.occurrence_at!).sort();
  }

  it('follows DST in Europe/Paris: a skipped 02:30 fires at 03:00, a repeated one once', async () => {
    clock.set(Date.parse('2026-03-28T12:00:00Z'));
    const w = await world('paris-dst');
    // 29 March 2026: 02:00 CET -> 03:00 CEST, so 02:30 does not exist that day.
    expect(await occurrences(w, { cron: '30 2 * * *', time_zone: 'Europe/Paris' }, 3)).toEqual([
      '2026-03-29T01:00:00.000Z',
      '2026-03-30T00:30:00.000Z',
      '2026-03-31T00:30:00.000Z',
    ]);
    // 25 October 2026: 03:00 CEST -> 02:00 CET, so 02:30 happens twice; it fires at the first.
    clock.set(Date.parse('2026-10-24T12:00:00Z'));
    expect(await occurrences(w, { cron: '30 2 * * *', time_zone: 'Europe/Paris' }, 2)).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
    ]);
    // A weekly 09:00 keeps its wall time across the change: 08:00Z in winter, 07:00Z in summer.
    clock.set(Date.parse('2026-03-20T12:00:00Z'));
    expect(await occurrences(w, { cron: '0 9 * * 1', time_zone: 'Europe/Paris' }, 2)).toEqual([
      '2026-03-23T08:00:00.000Z',
      '2026-03-30T07:00:00.000Z',
    ]);
  });

  it('follows DST in America/New_York', async () => {
    clock.set(Date.parse('2026-03-07T12:00:00Z'));
    const w = await world('ny-dst');
    // 8 March 2026: 02:00 EST -> 03:00 EDT.
    expect(await occurrences(w, { cron: '30 2 * * *', time_zone: 'America/New_York' }, 2)).toEqual([
      '2026-03-08T07:00:00.000Z',
      '2026-03-09T06:30:00.000Z',
    ]);
    // 1 November 2026: 02:00 EDT -> 01:00 EST, so 01:30 happens twice; it fires once, at the first.
    clock.set(Date.parse('2026-10-31T12:00:00Z'));
    expect(await occurrences(w, { cron: '30 1 * * *', time_zone: 'America/New_York' }, 2)).toEqual([
      '2026-11-01T05:30:00.000Z',
      '2026-11-02T06:30:00.000Z',
    ]);
  });

  it('in_local_time: each occurrence becomes a local-time trigger at its wall time, created before UTC+14 reaches it', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const w = await world('local');
    const made = await create(w, { cron: '0 9 * * 1', time_zone: 'Europe/Paris', in_local_time: true });
    expect(made).toMatchObject({ in_local_time: true, next_occurrence_at: '2026-11-30T08:00:00.000Z' });
    // Monday 09:00 reaches UTC+14 on Sunday at 19:00Z: the trigger is made 10 minutes before.
    const dueAt = async () =>
      Number(
        (
          await sql<{
            run_at: number;
          }>`select run_at from jobs where job_key like ${`campaign.schedule-occurrence:${made.schedule_id}:%`} and state = 'pending'`.execute(
            ctx().database.db,
          )
        ).rows[0]!.run_at,
      );
    expect(new Date(await dueAt()).toISOString()).toBe('2026-11-29T18:50:00.000Z');
    clock.set(Date.parse('2026-11-29T18:49:59Z'));
    await runOccurrences();
    expect(await triggers(w)).toEqual([]);
    clock.set(Date.parse('2026-11-29T18:50:00Z'));
    await runOccurrences();
    const [created] = await triggers(w);
    expect(created).toMatchObject({
      state: 'scheduled',
      scheduled_at: '2026-11-29T19:00:00.000Z',
      schedule_id: made.schedule_id,
      occurrence_at: '2026-11-30T08:00:00.000Z',
    });
    const status = await json(
      ctx(),
      'GET',
      `/api/v1/campaigns/${w.campaignId}/triggers/${created!.trigger_id}`,
      undefined,
      w.secret,
    );
    expect(status.json()).toMatchObject({
      schedule: { at: '2026-11-30T09:00:00', in_local_time: true, fallback_time_zone: 'Europe/Paris' },
    });
    expect(await get(w, made.schedule_id)).toMatchObject({
      occurrences: 1,
      next_occurrence_at: '2026-12-07T08:00:00.000Z',
      last_occurrence: { trigger_id: created!.trigger_id },
    });
    expect(new Date(await dueAt()).toISOString()).toBe('2026-12-06T18:50:00.000Z');
    // Summer time: 09:00 in Paris is 07:00Z, but the wall time (and so UTC+14's 19:00Z the day before) is the same.
    clock.set(Date.parse('2027-03-27T12:00:00Z'));
    const summer = await create(w, { cron: '0 9 * * 1', time_zone: 'Europe/Paris', in_local_time: true });
    expect(summer.next_occurrence_at).toBe('2027-03-29T07:00:00.000Z');
    clock.set(Date.parse('2027-03-28T18:50:00Z'));
    await runOccurrences();
    const local = (await triggers(w)).find((t) => t.schedule_id === summer.schedule_id);
    expect(local).toMatchObject({
      scheduled_at: '2027-03-28T19:00:00.000Z',
      occurrence_at: '2027-03-29T07:00:00.000Z',
    });
  });

  it('keeps to starts_at and ends_at (both inclusive), then ends with no job left', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const w = await world('bounds');
    const made = await create(w, {
      cron: '0 12 * * *',
      time_zone: 'UTC',
      starts_at: '2026-12-01T12:00:00Z',
      ends_at: '2026-12-03T12:00:00Z',
    });
    expect(made).toMatchObject({
      starts_at: '2026-12-01T12:00:00.000Z',
      ends_at: '2026-12-03T12:00:00.000Z',
      next_occurrence_at: '2026-12-01T12:00:00.000Z',
    });
    await fireNext(w, made.schedule_id);
    await fireNext(w, made.schedule_id);
    const last = await fireNext(w, made.schedule_id);
    expect(last).toMatchObject({ state: 'ended', next_occurrence_at: null, occurrences: 3 });
    expect((await triggers(w)).map((t) => t.occurrence_at).sort()).toEqual([
      '2026-12-01T12:00:00.000Z',
      '2026-12-02T12:00:00.000Z',
      '2026-12-03T12:00:00.000Z',
    ]);
    expect(await pendingJobs(made.schedule_id)).toEqual([]);
    const paused = await post(w, `/${made.schedule_id}:pause`);
    expect(paused.statusCode).toBe(409);
    expect(paused.json<{ error: string }>().error).toMatch(/has ended/);
    expect((await post(w, `/${made.schedule_id}:resume`)).statusCode).toBe(409);
  });

  it('pause stops occurrences, resume fires from now on (missed ones not replayed), delete ends it', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const w = await world('pause');
    const made = await create(w, { cron: '0 12 * * *', time_zone: 'UTC' });
    const paused = await post(w, `/${made.schedule_id}:pause`);
    expect(paused.statusCode, paused.body).toBe(200);
    expect(paused.json()).toMatchObject({ state: 'paused', next_occurrence_at: null });
    expect(await pendingJobs(made.schedule_id)).toEqual([]);
    // Pausing again answers the same.
    const again = await post(w, `/${made.schedule_id}:pause`);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(paused.json());

    clock.set(Date.parse('2026-11-30T18:00:00Z')); // two occurrences missed
    await runOccurrences();
    expect(await triggers(w)).toEqual([]);
    const resumed = await post(w, `/${made.schedule_id}:resume`);
    expect(resumed.statusCode, resumed.body).toBe(200);
    expect(resumed.json()).toMatchObject({ state: 'active', next_occurrence_at: '2026-12-01T12:00:00.000Z' });
    expect((await post(w, `/${made.schedule_id}:resume`)).json()).toMatchObject({ state: 'active' });
    await runOccurrences();
    expect(await triggers(w)).toEqual([]);
    await fireNext(w, made.schedule_id);
    expect((await triggers(w)).map((t) => t.occurrence_at)).toEqual(['2026-12-01T12:00:00.000Z']);

    const deleted = await json(ctx(), 'DELETE', `${w.base}/${made.schedule_id}`, undefined, w.secret);
    expect(deleted.statusCode).toBe(200);
    expect((await json(ctx(), 'GET', `${w.base}/${made.schedule_id}`, undefined, w.secret)).statusCode).toBe(404);
    expect(await pendingJobs(made.schedule_id)).toEqual([]);
    clock.set(Date.parse('2026-12-05T12:00:00Z'));
    await runOccurrences();
    expect(await triggers(w)).toHaveLength(1); // the trigger it made stays
    expect((await json(ctx(), 'DELETE', `${w.base}/${made.schedule_id}`, undefined, w.secret)).statusCode).toBe(404);
  });

  it('a pause that commits while the occurrence job is claimed: the job fires nothing', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const w = await world('pause-race');
    const made = await create(w, { cron: '0 12 * * *', time_zone: 'UTC' });
    clock.set(Date.parse(made.next_occurrence_at!));
    // The job's handler is reached only after the pause committed (as a worker that claimed it just before).
    const paused = await post(w, `/${made.schedule_id}:pause`);
    expect(paused.statusCode).toBe(200);
    await handler()(
      { scheduleId: made.schedule_id, seq: 1 },
      {
        db: ctx().database.db,
        logger: ctx().herald.logger,
        jobId: 'x',
        attempt: 1,
        maxAttempts: 25,
        signal: new AbortController().signal,
        stopping: new AbortController().signal,
      },
    );
    expect(await triggers(w)).toEqual([]);
    expect(await get(w, made.schedule_id)).toMatchObject({ state: 'paused', occurrences: 0, skipped: 0 });
  });

  it('in_local_time: a pause before the occurrence cancels its trigger already made; resume goes on after it', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const w = await world('local-pause');
    const made = await create(w, { cron: '0 9 * * 1', time_zone: 'Europe/Paris', in_local_time: true });
    const triggerStatus = async (id: string) =>
      (await json(ctx(), 'GET', `/api/v1/campaigns/${w.campaignId}/triggers/${id}`, undefined, w.secret)).json<{
        state: string;
        error?: string;
      }>();
    const pendingPlan = async (id: string) =>
      (
        await sql<{
          job_key: string;
        }>`select job_key from jobs where job_key = ${planJobKey(id)} and state = 'pending'`.execute(ctx().database.db)
      ).rows.length;
    // Monday 09:00 in Paris (08:00Z): its trigger is made on Sunday at 18:50Z, before UTC+14 reaches 09:00.
    clock.set(Date.parse('2026-11-29T18:50:00Z'));
    await runOccurrences();
    const [first] = await triggers(w);
    expect(first).toMatchObject({ state: 'scheduled', occurrence_at: '2026-11-30T08:00:00.000Z' });
    expect(await pendingPlan(first!.trigger_id)).toBe(1);

    // Paused before the occurrence's instant: it is a future occurrence, so its trigger is canceled too.
    clock.set(Date.parse('2026-11-30T07:00:00Z'));
    const paused = await post(w, `/${made.schedule_id}:pause`);
    expect(paused.statusCode, paused.body).toBe(200);
    expect(paused.json()).toMatchObject({ state: 'paused', next_occurrence_at: null });
    expect(await triggerStatus(first!.trigger_id)).toMatchObject({
      state: 'canceled',
      error: CANCELED_BY_SCHEDULE_PAUSE,
    });
    expect(await pendingPlan(first!.trigger_id)).toBe(0);

    // Resumed before that instant: the next occurrence is the one after it. The canceled one is not
    // made again (its trigger holds the occurrence), nor recorded as failed.
    const resumed = await post(w, `/${made.schedule_id}:resume`);
    expect(resumed.statusCode, resumed.body).toBe(200);
    expect(resumed.json()).toMatchObject({ state: 'active', next_occurrence_at: '2026-12-07T08:00:00.000Z' });
    clock.set(Date.parse('2026-11-30T09:00:00Z'));
    await runOccurrences();
    expect((await triggers(w)).map((t) => t.trigger_id)).toEqual([first!.trigger_id]);
    expect(await get(w, made.schedule_id)).toMatchObject({ occurrences: 1, skipped: 0 });

    // Paused after the next occurrence's instant: its trigger is under way and stays.
    clock.set(Date.parse('2026-12-06T18:50:00Z'));
    await runOccurrences();
    const second = (await triggers(w)).find((t) => t.occurrence_at === '2026-12-07T08:00:00.000Z');
    expect(second).toMatchObject({ state: 'scheduled' });
    clock.set(Date.parse('2026-12-07T08:30:00Z'));
    expect((await post(w, `/${made.schedule_id}:pause`)).statusCode).toBe(200);
    expect(await triggerStatus(second!.trigger_id)).toMatchObject({ state: 'scheduled' });
    expect(await pendingPlan(second!.trigger_id)).toBe(1);
    // Resumed, the next occurrence follows the one already made.
    const again = await post(w, `/${made.schedule_id}:resume`);
    expect(again.json()).toMatchObject({ state: 'active', next_occurrence_at: '2026-12-14T08:00:00.000Z' });
  });

  it('an occurrence while the campaign is paused is skipped and recorded; the next one fires', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const w = await world('campaign-paused');
    const made = await create(w, { cron: '0 12 * * *', time_zone: 'UTC' });
    const patch = (status: string) => json(ctx(), 'PATCH', `/api/v1/campaigns/${w.campaignId}`, { status }, w.secret);
    expect((await patch('paused')).statusCode).toBe(200);
    const skipped = await fireNext(w, made.schedule_id);
    expect(skipped).toMatchObject({
      state: 'active',
      next_occurrence_at: '2026-11-30T12:00:00.000Z',
      occurrences: 0,
      skipped: 1,
      last_occurrence: { at: '2026-11-29T12:00:00.000Z', trigger_id: null },
    });
    expect(skipped.last_occurrence!.skipped_reason).toMatch(/^CAMPAIGN_NOT_ACTIVE: .*paused/);
    expect(await triggers(w)).toEqual([]);
    expect((await patch('active')).statusCode).toBe(200);
    expect(await fireNext(w, made.schedule_id)).toMatchObject({ occurrences: 1, skipped: 1 });
    expect(await triggers(w)).toHaveLength(1);
  });

  it('an occurrence whose job runs out of attempts is recorded as failed; the schedule goes on', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const w = await world('occurrence-failed');
    const made = await create(w, { cron: '0 12 * * *', time_zone: 'UTC' });
    // Its last attempt: the next failure spends it (a database outage longer than the retries).
    await sql`update jobs set max_attempts = 1 where job_key like ${`campaign.schedule-occurrence:${made.schedule_id}:%`}`.execute(
      ctx().database.db,
    );
    const failing = Object.assign(
      async () => {
        throw new Error('the database is away');
      },
      { finalise: handler().finalise! },
    ) as JobHandler<'campaign.schedule-occurrence'>;
    clock.set(Date.parse('2026-11-29T12:00:00Z'));
    const outcome = await runJobsUntilIdle(ctx().database.db, { 'campaign.schedule-occurrence': failing }, { clock });
    expect(outcome.runs).toBeGreaterThanOrEqual(1);
    const after = await get(w, made.schedule_id);
    expect(after).toMatchObject({
      state: 'active',
      next_occurrence_at: '2026-11-30T12:00:00.000Z',
      occurrences: 0,
      skipped: 1,
      last_occurrence: { at: '2026-11-29T12:00:00.000Z', trigger_id: null },
    });
    expect(after.last_occurrence!.skipped_reason).toMatch(/^FAILED: /);
    expect(await pendingJobs(made.schedule_id)).toHaveLength(1);
    expect(await fireNext(w, made.schedule_id)).toMatchObject({ occurrences: 1, skipped: 1 });
    expect(await triggers(w)).toHaveLength(1);
  });

  it('an occurrence reached late fires within SCHEDULE_LATE_LIMIT_MS (1 h); later it is skipped as missed', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const w = await world('late');
    const made = await create(w, { cron: '0 12 * * *', time_zone: 'UTC' });
    clock.set(Date.parse('2026-11-29T12:40:00Z')); // a server that was down at 12:00
    await runOccurrences();
    expect((await triggers(w)).map((t) => t.occurrence_at)).toEqual(['2026-11-29T12:00:00.000Z']);
    clock.set(Date.parse('2026-12-02T15:00:00Z')); // down for days: only the first missed one is looked at
    await runOccurrences();
    const after = await get(w, made.schedule_id);
    expect(after).toMatchObject({
      occurrences: 1,
      skipped: 1,
      next_occurrence_at: '2026-12-03T12:00:00.000Z',
      last_occurrence: { at: '2026-11-30T12:00:00.000Z', trigger_id: null },
    });
    expect(after.last_occurrence!.skipped_reason).toMatch(/^MISSED: /);
    expect(await triggers(w)).toHaveLength(1);
  });

  it('one trigger per occurrence: the database refuses a second one for the same (schedule, instant)', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const w = await world('unique');
    const made = await create(w, { cron: '0 12 * * *', time_zone: 'UTC' });
    await fireNext(w, made.schedule_id);
    const [row] = (
      await sql<
        Record<string, unknown>
      >`select * from campaign_triggers where schedule_id = ${made.schedule_id}`.execute(ctx().database.db)
    ).rows;
    await expect(
      ctx()
        .database.db.insertInto('campaign_triggers')
        .values({ ...(row as object), id: 'duplicate-of-an-occurrence' } as never)
        .execute(),
    ).rejects.toThrow(/unique|UNIQUE/);
  });

  it('answers 400 with a clear message for every bad body, storing nothing', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const w = await world('bad');
    const ok = { cron: '0 9 * * 1', time_zone: 'Europe/Paris' };
    const cases: Array<[unknown, string, RegExp]> = [
      [{ ...ok, cron: '0 0 9 * * 1' }, 'INVALID_CRON', /expected 5 fields .*seconds and years are not supported/],
      [{ ...ok, cron: '0 9 * *' }, 'INVALID_CRON', /expected 5 fields/],
      [{ ...ok, cron: '61 9 * * 1' }, 'INVALID_CRON', /minute/],
      [{ ...ok, cron: 'every monday' }, 'INVALID_CRON', /cron: /],
      [{ ...ok, cron: '' }, 'INVALID_CRON', /expected a cron expression/],
      [{ ...ok, cron: '0 9 30 2 *' }, 'INVALID_CRON', /names no day that exists/],
      [{ ...ok, cron: '*/5 * * * *' }, 'CRON_TOO_FREQUENT', /fires 5 min apart; .*every 15 min/],
      [{ ...ok, cron: '0,10 9 * * *' }, 'CRON_TOO_FREQUENT', /10 min apart/],
      [{ ...ok, cron: '0 9 * * 8' }, 'INVALID_CRON', /cron: /],
      // 23:55 then 00:05 the next day: the gap across midnight counts too.
      [{ ...ok, cron: '5,55 0,23 * * *' }, 'CRON_TOO_FREQUENT', /10 min apart/],
      [{ ...ok, cron: 9 }, 'INVALID_SCHEDULE_BODY', /^cron: expected a cron expression/],
      [{ ...ok, time_zone: 'Mars/Olympus' }, 'INVALID_TIME_ZONE', /time_zone: expected an IANA time zone/],
      [{ ...ok, time_zone: '+01:00' }, 'INVALID_TIME_ZONE', /IANA/],
      [{ cron: ok.cron }, 'INVALID_SCHEDULE_BODY', /time_zone is required/],
      [{ ...ok, starts_at: '2026-12-24T09:00' }, 'INVALID_INSTANT', /starts_at: expected an RFC 3339 instant/],
      [{ ...ok, ends_at: 'soon' }, 'INVALID_INSTANT', /ends_at: /],
      [
        { ...ok, starts_at: '2027-01-02T00:00:00Z', ends_at: '2027-01-01T00:00:00Z' },
        'INVALID_BOUNDS',
        /starts_at must be before ends_at/,
      ],
      [{ ...ok, ends_at: '2026-11-01T00:00:00Z' }, 'INVALID_BOUNDS', /ends_at is in the past/],
      [{ ...ok, starts_at: '2028-01-01T00:00:00Z' }, 'INVALID_BOUNDS', /more than a year ahead/],
      [{ ...ok, ends_at: '2026-11-29T00:00:00Z' }, 'NO_OCCURRENCE', /fires at no instant before ends_at/],
      [{ ...ok, in_local_time: 'yes' }, 'INVALID_SCHEDULE_BODY', /in_local_time: expected a boolean/],
      [{ ...ok, audience: { targets: [] } }, 'INVALID_SCHEDULE_BODY', /^audience\.targets: /],
      [{ ...ok, audience: { everyone: true } }, 'INVALID_SCHEDULE_BODY', /^audience: give broadcast: true or targets/],
      [{ ...ok, properties: { a: { nested: 1 } } }, 'INVALID_SCHEDULE_BODY', /^properties\.a: /],
      [{ ...ok, every: 'week' }, 'INVALID_SCHEDULE_BODY', /Unexpected field "every"/],
      [[ok], 'INVALID_SCHEDULE_BODY', /must be a JSON object/],
    ];
    for (const [body, reason, message] of cases) {
      const res = await post(w, '', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.headers['x-error-reason'], JSON.stringify(body)).toBe(reason);
      expect(res.json<{ error: string }>().error, JSON.stringify(body)).toMatch(message);
    }
    const junk = await ctx().inject({
      method: 'POST',
      url: w.base,
      headers: { ...w.secret, 'content-type': 'application/json' },
      payload: '{"cron": ',
    });
    expect(junk.statusCode).toBe(400);
    expect(junk.json()).toHaveProperty('error');
    expect((await json(ctx(), 'GET', w.base, undefined, w.secret)).json()).toEqual({
      schedules: [],
      next_cursor: null,
    });
  });

  it('checks the audience and properties against the campaign as :trigger does (400), and the campaign exists (404)', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const ok = { cron: '0 9 * * 1', time_zone: 'Europe/Paris' };
    const reads = await world('reads', { message: { title: 'Code {{ trigger.code }}', body: 'Hi' } });
    const missing = await post(reads, '', ok);
    expect(missing.statusCode).toBe(400);
    expect(missing.headers['x-error-reason']).toBe('MISSING_TRIGGER_PROPERTY');
    expect(missing.json<{ error: string }>().error).toMatch(/code/);
    expect((await post(reads, '', { ...ok, properties: { code: 'XMAS' } })).statusCode).toBe(201);

    const byEvent = await world('by-event', { api_triggered: false });
    const refused = await post(byEvent, '', ok);
    expect(refused.statusCode).toBe(400);
    expect(refused.headers['x-error-reason']).toBe('CAMPAIGN_NOT_API_TRIGGERED');

    // A draft campaign may be given a schedule (its occurrences are skipped until it is active).
    const draft = await world('draft', { status: 'draft' });
    expect((await post(draft, '', ok)).statusCode).toBe(201);

    const nobody = await world('nobody');
    const unknown = await json(ctx(), 'POST', '/api/v1/campaigns/no-such-campaign/schedules', ok, nobody.secret);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json<{ error: string }>().error).toMatch(/no-such-campaign does not exist/);
    for (const path of ['', '/some-id']) {
      const res = await json(
        ctx(),
        'GET',
        `/api/v1/campaigns/no-such-campaign/schedules${path}`,
        undefined,
        nobody.secret,
      );
      expect(res.statusCode, path).toBe(404);
    }
    const noSchedule = await json(ctx(), 'GET', `${nobody.base}/no-such-schedule`, undefined, nobody.secret);
    expect(noSchedule.statusCode).toBe(404);
    expect(noSchedule.headers['x-error-reason']).toBe('SCHEDULE_NOT_FOUND');
    for (const verb of ['pause', 'resume'])
      expect((await post(nobody, `/no-such-schedule:${verb}`)).statusCode).toBe(404);
    const badLimit = await json(ctx(), 'GET', `${nobody.base}?limit=0`, undefined, nobody.secret);
    expect(badLimit.statusCode).toBe(400);
    const badCursor = await json(ctx(), 'GET', `${nobody.base}?cursor=nope`, undefined, nobody.secret);
    expect(badCursor.statusCode).toBe(400);
  });

  it("isolates projects: another project's schedule is 404 for every verb; the public key is refused", async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const w = await world('owner');
    const made = await create(w, { cron: '0 9 * * 1', time_zone: 'UTC' });
    const other = await ctx().newProject('intruder');
    // Same campaign id in the intruder's project, so only the project tells them apart.
    await createCampaign(ctx(), { campaign_id: w.campaignId }, other.secret);
    const path = `${w.base}/${made.schedule_id}`;
    expect((await json(ctx(), 'GET', path, undefined, other.secret)).statusCode).toBe(404);
    expect((await json(ctx(), 'POST', `${path}:pause`, {}, other.secret)).statusCode).toBe(404);
    expect((await json(ctx(), 'POST', `${path}:resume`, {}, other.secret)).statusCode).toBe(404);
    expect((await json(ctx(), 'DELETE', path, undefined, other.secret)).statusCode).toBe(404);
    expect((await json(ctx(), 'GET', w.base, undefined, other.secret)).json()).toEqual({
      schedules: [],
      next_cursor: null,
    });
    expect((await json(ctx(), 'GET', path, undefined, other.public)).statusCode).toBe(401);
    expect(await get(w, made.schedule_id)).toMatchObject({ state: 'active' });
  });

  it('pages the list oldest first', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const w = await world('paging');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await create(w, { cron: `${i} 9 * * 1`, time_zone: 'UTC' })).schedule_id);
      clock.advance(1000);
    }
    const first = await json(ctx(), 'GET', `${w.base}?limit=2`, undefined, w.secret);
    const page = first.json<{ schedules: Schedule[]; next_cursor: string }>();
    expect(page.schedules.map((s) => s.schedule_id)).toEqual(ids.slice(0, 2));
    const second = await json(ctx(), 'GET', `${w.base}?limit=2&cursor=${page.next_cursor}`, undefined, w.secret);
    expect(second.json()).toMatchObject({ next_cursor: null });
    expect(second.json<{ schedules: Schedule[] }>().schedules.map((s) => s.schedule_id)).toEqual(ids.slice(2));
  });

  it('a campaign holds at most MAX_SCHEDULES_PER_CAMPAIGN schedules that have not ended (409); deleting one makes room', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const w = await world('limit');
    const ids: string[] = [];
    for (let i = 0; i < MAX_SCHEDULES_PER_CAMPAIGN; i++)
      ids.push((await create(w, { cron: `${i} 9 * * *`, time_zone: 'UTC' })).schedule_id);
    const over = await json(ctx(), 'POST', w.base, { cron: '59 9 * * *', time_zone: 'UTC' }, w.secret);
    expect([over.statusCode, over.headers['x-error-reason']]).toEqual([409, 'SCHEDULE_LIMIT_REACHED']);
    expect(over.body).toContain(`at most ${MAX_SCHEDULES_PER_CAMPAIGN} schedules`);
    expect((await json(ctx(), 'DELETE', `${w.base}/${ids[0]}`, undefined, w.secret)).statusCode).toBeLessThan(300);
    expect((await create(w, { cron: '59 9 * * *', time_zone: 'UTC' })).schedule_id).toEqual(expect.any(String));
  });

  it('deleting the campaign deletes its schedules; their job then does nothing', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const w = await world('campaign-deleted');
    const made = await create(w, { cron: '0 12 * * *', time_zone: 'UTC' });
    expect((await json(ctx(), 'DELETE', `/api/v1/campaigns/${w.campaignId}`, undefined, w.secret)).statusCode).toBe(
      200,
    );
    const rows = await ctx()
      .database.db.selectFrom('campaign_schedules')
      .select('id')
      .where('id', '=', made.schedule_id)
      .execute();
    expect(rows).toEqual([]);
    clock.set(Date.parse(made.next_occurrence_at!));
    const ran = await runOccurrences();
    expect(ran.succeeded).toBeGreaterThanOrEqual(1);
    const made2 = await sql<{
      n: number;
    }>`select count(*) as n from campaign_triggers where schedule_id = ${made.schedule_id}`.execute(ctx().database.db);
    expect(Number(made2.rows[0]!.n)).toBe(0);
  });

  it('documents the schedule routes in the OpenAPI document with examples', async () => {
    type Operation = {
      operationId: string;
      requestBody?: { content: Record<string, { example?: unknown }> };
      responses: Record<string, { content?: Record<string, { example?: unknown }> }>;
    };
    const doc = (await ctx().inject({ method: 'GET', url: '/openapi.json' })).json<{
      paths: Record<string, Record<string, Operation>>;
    }>();
    const base = '/api/v1/campaigns/{campaign_id}/schedules';
    const create = doc.paths[base]!.post!;
    expect(create.operationId).toBe('createSchedule');
    expect(create.requestBody?.content['application/json']?.example).toMatchObject({ cron: '0 9 * * 1' });
    expect(create.responses['201']?.content?.['application/json']?.example).toMatchObject({ state: 'active' });
    expect(doc.paths[base]?.get?.operationId).toBe('listSchedules');
    expect(doc.paths[`${base}/{schedule_id}`]?.get?.operationId).toBe('getSchedule');
    expect(doc.paths[`${base}/{schedule_id}`]?.delete?.operationId).toBe('deleteSchedule');
    expect(doc.paths[`${base}/{schedule_id}:pause`]?.post?.operationId).toBe('pauseSchedule');
    expect(doc.paths[`${base}/{schedule_id}:resume`]?.post?.operationId).toBe('resumeSchedule');
  });
});
