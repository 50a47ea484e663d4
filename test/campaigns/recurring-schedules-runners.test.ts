import { sql } from 'kysely';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { readJson } from '../../src/db/json.js';
import { claimJobs } from '../../src/jobs/jobs.repository.js';
import type { JobHandler } from '../../src/jobs/job-types.js';
import { createJobRunner, enqueueJob, type JobRunner } from '../../src/jobs/jobs.js';
import { manualClock } from '../helpers/clock.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import { createCampaign, createUser, json } from './campaign-helpers.js';

type Schedule = { schedule_id: string; next_occurrence_at: string; occurrences: number };

/** Exactly once across instances and restarts, with real job runners (rule `recurring-schedules`). */
describe.each(TEST_DIALECTS)('recurring schedules with job runners on %s', (dialect) => {
  const clock = manualClock(Date.parse('2026-11-28T12:00:00Z'));
  const ctx = useTestContext(dialect, { overrides: { clock } });
  const handler = () =>
    ctx().herald.jobHandlers['campaign.schedule-occurrence'] as JobHandler<'campaign.schedule-occurrence'>;
  let runners: JobRunner[] = [];
  afterEach(async () => {
    await Promise.all(runners.map((r) => r.stop()));
    runners = [];
  });
  /** One instance's job runner: only the occurrence jobs, so the triggers they create stay queued. */
  const startRunner = async (workerId: string) => {
    const runner = createJobRunner({
      db: ctx().database.db,
      logger: pino({ level: 'silent' }),
      clock,
      handlers: { 'campaign.schedule-occurrence': handler() },
      concurrency: 2,
      pollIntervalMs: 20,
      leaseMs: 5_000,
      workerId,
    });
    runners.push(runner);
    await runner.start();
    return runner;
  };

  async function daily(tag: string) {
    const { secret } = await ctx().newProject(tag);
    const campaignId = await createCampaign(ctx(), {}, secret);
    const base = `/api/v1/campaigns/${campaignId}/schedules`;
    const res = await json(ctx(), 'POST', base, { cron: '0 12 * * *', time_zone: 'UTC' }, secret);
    expect(res.statusCode, res.body).toBe(201);
    const schedule = res.json<Schedule>();
    const get = async () =>
      (await json(ctx(), 'GET', `${base}/${schedule.schedule_id}`, undefined, secret)).json<Schedule>();
    return { schedule, get };
  }
  const triggersOf = async (scheduleId: string) =>
    (
      await sql<{
        occurrence_at: number;
      }>`select occurrence_at from campaign_triggers where schedule_id = ${scheduleId} order by occurrence_at`.execute(
        ctx().database.db,
      )
    ).rows.map((r) => new Date(Number(r.occurrence_at)).toISOString());
  const jobsOf = async (scheduleId: string) =>
    (
      await ctx()
        .database.db.selectFrom('jobs')
        .select(['payload', 'state', 'attempts'])
        .where('kind', '=', 'campaign.schedule-occurrence')
        .execute()
    ).filter((j) => readJson<{ scheduleId: string }>(j.payload).scheduleId === scheduleId);

  it('three instances, and three jobs for one occurrence: one trigger, one next job', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const { schedule, get } = await daily('three');
    // Two more jobs for the same occurrence (as a restored backup or an operator's replay could leave):
    // whichever instances claim them, the schedule row's sequence lets one through.
    for (let i = 0; i < 2; i++)
      await enqueueJob(
        ctx().database.db,
        'campaign.schedule-occurrence',
        { scheduleId: schedule.schedule_id, seq: 1 },
        { clock, runAt: Date.parse(schedule.next_occurrence_at) },
      );
    await Promise.all(['a', 'b', 'c'].map((id) => startRunner(`instance-${id}`)));
    clock.set(Date.parse(schedule.next_occurrence_at));
    await waitFor(
      async () => (await jobsOf(schedule.schedule_id)).filter((j) => j.state === 'succeeded').length === 3,
      { what: 'the three jobs of the occurrence to run' },
    );
    expect(await triggersOf(schedule.schedule_id)).toEqual(['2026-11-29T12:00:00.000Z']);
    expect(await get()).toMatchObject({ occurrences: 1, next_occurrence_at: '2026-11-30T12:00:00.000Z' });
    const jobs = await jobsOf(schedule.schedule_id);
    expect(jobs.filter((j) => j.state === 'pending')).toHaveLength(1);
    // None failed on the way (no unique-key error retried): each ran once.
    expect(jobs.every((j) => Number(j.attempts) <= 1)).toBe(true);

    clock.set(Date.parse('2026-11-30T12:00:00Z'));
    await waitFor(async () => (await get()).occurrences === 2, { what: 'the second occurrence' });
    expect(await triggersOf(schedule.schedule_id)).toEqual(['2026-11-29T12:00:00.000Z', '2026-11-30T12:00:00.000Z']);
  });

  it('a worker lost after its occurrence committed, then runners stopped and started again: no double fire', async () => {
    clock.set(Date.parse('2026-11-28T12:00:00Z'));
    const { schedule, get } = await daily('restart');
    clock.set(Date.parse(schedule.next_occurrence_at));
    // A worker claims the job, commits the occurrence, and dies before marking the job done.
    const [claimed] = await claimJobs(ctx().database.db, {
      lockToken: 'lost-worker/1',
      now: clock.now(),
      leaseMs: 1000,
      limit: 1,
      kinds: ['campaign.schedule-occurrence'],
    });
    expect(claimed).toBeDefined();
    await handler()(
      { scheduleId: schedule.schedule_id, seq: 1 },
      {
        db: ctx().database.db,
        logger: pino({ level: 'silent' }),
        jobId: claimed!.id,
        attempt: 1,
        maxAttempts: 25,
        signal: new AbortController().signal,
        stopping: new AbortController().signal,
      },
    );
    expect(await triggersOf(schedule.schedule_id)).toEqual(['2026-11-29T12:00:00.000Z']);

    // Its lease expires; an instance comes up, hands the job back and runs it again: nothing more.
    clock.advance(2000);
    const first = await startRunner('after-crash');
    await waitFor(async () => (await jobsOf(schedule.schedule_id)).some((j) => j.state === 'succeeded'), {
      what: 'the lost job to be run again',
    });
    expect(await triggersOf(schedule.schedule_id)).toHaveLength(1);
    await first.stop();

    // Stopped and started again (a deploy): the next occurrence fires once.
    await startRunner('after-restart');
    clock.set(Date.parse('2026-11-30T12:00:00Z'));
    await waitFor(async () => (await get()).occurrences === 2, { what: 'the next occurrence after the restart' });
    expect(await triggersOf(schedule.schedule_id)).toEqual(['2026-11-29T12:00:00.000Z', '2026-11-30T12:00:00.000Z']);
  });
});

/** Real time end to end: a schedule's occurrence fans out to the push stand-ins through the real job runner. */
describe.each(TEST_DIALECTS)('a recurring schedule sends on %s', (dialect) => {
  const fakes = useFakeProviders();
  // Real time, shifted so that the next occurrence is a second away.
  let offset = 0;
  const clock = { now: () => Date.now() + offset };
  const ctx = useTestContext(dialect, {
    env: { JOB_POLL_INTERVAL_MS: '50' },
    overrides: async (database) => ({ ...pushOverrides(fakes)(database), clock }),
  });
  let runner: JobRunner | undefined;
  afterEach(async () => {
    await runner?.stop();
  });

  it('the occurrence creates a trigger that sends to every device of the audience', async () => {
    const { secret } = await ctx().newProject('e2e');
    await configureProviders(ctx(), secret, fakes());
    const tokens: string[] = [];
    for (let i = 0; i < 2; i++) {
      await createUser(ctx(), `u${i}`, {}, secret);
      tokens.push(fcmToken());
      await registerDevice(ctx(), secret, `u${i}`, { fcm_token: tokens[i]! });
    }
    const campaignId = await createCampaign(
      ctx(),
      { message: { title: 'Weekly', body: 'Code {{ trigger.code }}' } },
      secret,
    );
    const base = `/api/v1/campaigns/${campaignId}/schedules`;
    const res = await json(
      ctx(),
      'POST',
      base,
      { cron: '*/15 * * * *', time_zone: 'UTC', audience: { broadcast: true }, properties: { code: 'MONDAY' } },
      secret,
    );
    expect(res.statusCode, res.body).toBe(201);
    const schedule = res.json<Schedule>();
    offset = Date.parse(schedule.next_occurrence_at) - Date.now() - 1000;
    runner = ctx().herald.createJobRunner();
    await runner.start();
    const sent = () =>
      fakes()
        .fcm.recorder.items.filter((i) => i.status === 200 && tokens.includes(i.token))
        .map((i) => i.token);
    await waitFor(() => sent().length === 2, { what: 'both devices to receive the occurrence' });
    expect(sent().sort()).toEqual([...tokens].sort());
    const after = (await json(ctx(), 'GET', `${base}/${schedule.schedule_id}`, undefined, secret)).json<{
      occurrences: number;
      last_occurrence: { trigger_id: string };
    }>();
    expect(after.occurrences).toBe(1);
    const status = await waitFor(
      async () => {
        const st = (
          await json(
            ctx(),
            'GET',
            `/api/v1/campaigns/${campaignId}/triggers/${after.last_occurrence.trigger_id}`,
            undefined,
            secret,
          )
        ).json<{ state: string; counters: { accepted: number }; schedule_id: string; occurrence_at: string }>();
        return st.state === 'completed' && st;
      },
      { what: 'the trigger to complete' },
    );
    expect(status).toMatchObject({
      schedule_id: schedule.schedule_id,
      occurrence_at: schedule.next_occurrence_at,
      counters: { accepted: 2 },
    });
  });
});
