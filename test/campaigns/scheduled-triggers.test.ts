import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createCampaignJobHandlers, type FanoutDeps } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { expiringLedgerTriggers, hasUnfinishedTriggerBetween } from '../../src/retention/retention.repository.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import { createCampaign, createUser, FAILED, json, trigger, triggerOk, triggerStatus } from './campaign-helpers.js';

type Headers = Record<string, string>;
const MINUTE = 60_000;

describe.each(TEST_DIALECTS)('scheduled triggers on %s', (dialect) => {
  const fakes = useFakeProviders();
  // Herald's clock, which the test moves: the trigger route, the job runner and the fan-out all read it.
  let offset = 0;
  const clock = { now: () => Date.now() + offset };
  const ctx = useTestContext(dialect, {
    overrides: async (database) => ({ ...pushOverrides(fakes)(database), clock }),
  });
  const iso = (ms: number) => new Date(ms).toISOString();

  /** Runs every due campaign job on Herald's clock, with the fan-out options given. */
  const runJobs = (options: Partial<FanoutDeps> = {}) =>
    runJobsUntilIdle(
      ctx().database.db,
      createCampaignJobHandlers({ push: ctx().herald.push, templates: ctx().herald.templates, clock, ...options }),
      { clock },
    );

  const accepted = (tokens: string[]) =>
    fakes()
      .fcm.recorder.items.filter((i) => i.status === 200 && tokens.includes(i.token))
      .map((i) => i.token);

  async function world(tag: string, users = 2, tokenPrefix = '') {
    const { secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    const tokens: string[] = [];
    for (let i = 0; i < users; i++) {
      await createUser(ctx(), `u${i}`, { plan: 'pro' }, secret);
      tokens.push(fcmToken(tokenPrefix));
      await registerDevice(ctx(), secret, `u${i}`, { fcm_token: tokens[i]! });
    }
    const campaignId = await createCampaign(ctx(), { segment: { property: 'plan', op: 'eq', value: 'pro' } }, secret);
    return { secret, tokens, campaignId };
  }

  const control = (w: { secret: Headers; campaignId: string }, triggerId: string, verb: string, body?: unknown) =>
    json(ctx(), 'POST', `/api/v1/campaigns/${w.campaignId}/triggers/${triggerId}:${verb}`, body ?? {}, w.secret);
  const status = (w: { secret: Headers; campaignId: string }, triggerId: string) =>
    triggerStatus(ctx(), w.campaignId, triggerId, w.secret);
  const pendingPlanJobs = async (triggerId: string) =>
    Number(
      (
        await sql<{
          n: number;
        }>`select count(*) as n from jobs where job_key = ${`campaign.plan:${triggerId}`} and state = 'pending'`.execute(
          ctx().database.db,
        )
      ).rows[0]!.n,
    );

  it('sends nothing before `at`, then fans out to the audience as it stands when it fires', async () => {
    const w = await world('at');
    const at = clock.now() + 10 * MINUTE;
    const triggerId = await triggerOk(
      ctx(),
      w.campaignId,
      { audience: { broadcast: true }, schedule: { at: iso(at) } },
      w.secret,
    );
    const before = await status(w, triggerId);
    expect(before).toMatchObject({
      state: 'scheduled',
      scheduled_at: iso(at),
      audience_evaluated_at: iso(at),
      started_at: null,
    });
    expect(await pendingPlanJobs(triggerId)).toBe(1);

    offset += 9 * MINUTE;
    await runJobs();
    expect(accepted(w.tokens)).toEqual([]);
    expect((await status(w, triggerId)).state).toBe('scheduled');

    // Created after the trigger but before `at`: in the audience when it fires.
    await createUser(ctx(), 'late', { plan: 'pro' }, w.secret);
    const late = fcmToken();
    await registerDevice(ctx(), w.secret, 'late', { fcm_token: late });

    offset += 2 * MINUTE;
    await runJobs();
    expect(accepted([...w.tokens, late]).sort()).toEqual([...w.tokens, late].sort());
    const after = await status(w, triggerId);
    expect(after).toMatchObject({ state: 'completed', scheduled_at: iso(at) });
    expect(Date.parse(after.started_at as string)).toBeGreaterThanOrEqual(at);
    expect(after.counters).toMatchObject({ in_segment: 3, eligible: 3, accepted: 3 });
  });

  it('a trigger without schedule is unchanged: queued, no scheduled_at, evaluated as of its creation', async () => {
    const w = await world('now', 1);
    const triggerId = await triggerOk(ctx(), w.campaignId, { audience: { broadcast: true } }, w.secret);
    const st = await status(w, triggerId);
    expect(st).toMatchObject({ state: 'queued', scheduled_at: null, audience_evaluated_at: st.created_at });
    await runJobs();
    expect((await status(w, triggerId)).state).toBe('completed');
  });

  it('`at` up to 60 s in the past fires at once', async () => {
    const w = await world('grace', 1);
    const triggerId = await triggerOk(
      ctx(),
      w.campaignId,
      { audience: { broadcast: true }, schedule: { at: iso(clock.now() - 30_000) } },
      w.secret,
    );
    expect((await status(w, triggerId)).state).toBe('scheduled');
    await runJobs();
    expect(await status(w, triggerId)).toMatchObject({ state: 'completed', counters: { accepted: 1 } });
  });

  it('refuses a bad schedule with 400 and the reason, storing nothing', async () => {
    const w = await world('bad', 1);
    const cases: Array<[unknown, string]> = [
      [{ at: iso(clock.now() - 2 * MINUTE) }, 'SCHEDULE_IN_PAST'],
      [{ at: iso(clock.now() + 366 * 24 * 60 * MINUTE) }, 'SCHEDULE_TOO_FAR'],
      [{ at: 'tomorrow at nine' }, 'INVALID_SCHEDULE'],
      [{ at: '2026-12-24T09:00:00' }, 'INVALID_SCHEDULE'],
      [{ at: '2026-12-24T09:00' }, 'INVALID_SCHEDULE'],
      [{ at: '2026-02-30T09:00:00Z' }, 'INVALID_SCHEDULE'],
      [{ at: '2026-12-24T25:00:00Z' }, 'INVALID_SCHEDULE'],
      [{ at: 1798102800000 }, 'INVALID_SCHEDULE'],
      [{ at: '2026-12-24T09:00:00Z', in_local_time: true }, 'INVALID_SCHEDULE'],
      ['2026-12-24T09:00:00Z', 'INVALID_SCHEDULE'],
    ];
    for (const [schedule, reason] of cases) {
      const res = await trigger(ctx(), w.campaignId, { schedule }, { headers: w.secret });
      expect(res.statusCode, JSON.stringify(schedule)).toBe(400);
      expect(res.body).toBe(FAILED);
      expect(res.headers['x-error-reason'], JSON.stringify(schedule)).toBe(reason);
    }
    const list = await json(ctx(), 'GET', `/api/v1/campaigns/${w.campaignId}/triggers`, undefined, w.secret);
    expect(list.json<{ triggers: unknown[] }>().triggers).toEqual([]);
    // A dry run checks the schedule too.
    const dry = await trigger(
      ctx(),
      w.campaignId,
      { schedule: { at: iso(clock.now() - 2 * MINUTE) } },
      {
        headers: w.secret,
        dryRun: true,
      },
    );
    expect(dry.statusCode).toBe(400);
    expect(dry.headers['x-error-reason']).toBe('SCHEDULE_IN_PAST');
  });

  it('cancel before it starts: nothing is ever sent, its job is withdrawn; cancel again answers the same', async () => {
    const w = await world('cancel-early');
    const at = clock.now() + 5 * MINUTE;
    const triggerId = await triggerOk(
      ctx(),
      w.campaignId,
      { audience: { broadcast: true }, schedule: { at: iso(at) } },
      w.secret,
    );
    const res = await control(w, triggerId, 'cancel');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      trigger_id: triggerId,
      state: 'canceled',
      error: 'canceled by request',
      counters: { accepted: 0, devices: 0 },
    });
    expect(await pendingPlanJobs(triggerId)).toBe(0);
    offset += 6 * MINUTE;
    await runJobs();
    expect(accepted(w.tokens)).toEqual([]);
    const again = await control(w, triggerId, 'cancel');
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({
      state: 'canceled',
      finished_at: res.json<{ finished_at: string }>().finished_at,
    });
    // Nor can it be rescheduled any more.
    const moved = await control(w, triggerId, 'reschedule', { schedule: { at: iso(clock.now() + MINUTE) } });
    expect(moved.statusCode).toBe(409);
    expect(moved.json<{ error: string }>().error).toMatch(/is canceled; only a scheduled trigger can be rescheduled/);
  });

  it('cancel mid fan-out: what was sent stays sent and counted, nothing more goes out', async () => {
    // Every send is held 1.5 s by the stand-in, one device per chunk: the cancel lands while the first is under way.
    const w = await world('cancel-mid', 4, 'slow-1500-');
    const triggerId = await triggerOk(ctx(), w.campaignId, { audience: { broadcast: true } }, w.secret);
    const running = runJobs({ sendChunk: 1, chunksInFlight: 1 });
    await waitFor(() => fakes().fcm.delayed === 1, { what: 'the first send under way' });
    const res = await control(w, triggerId, 'cancel');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<{ state: string }>().state).toBe('canceled');
    await running;
    expect(accepted(w.tokens)).toHaveLength(1);
    const st = await status(w, triggerId);
    expect(st).toMatchObject({
      state: 'canceled',
      error: 'canceled by request',
      counters: { in_segment: 4, eligible: 4, devices: 1, accepted: 1, failed: 0 },
      progress: { batches_planned: 1, batches_finished: 1 },
    });
    const ledger = await sql<{
      n: number;
    }>`select count(*) as n from trigger_deliveries where trigger_id = ${triggerId}`.execute(ctx().database.db);
    expect(Number(ledger.rows[0]!.n)).toBe(1);
    // Running the queue again sends nothing more.
    offset += 2 * 60 * MINUTE;
    await runJobs();
    expect(accepted(w.tokens)).toHaveLength(1);
  });

  it('a finished trigger cannot be canceled (409, saying why); unknown triggers are 404', async () => {
    const w = await world('cancel-done', 1);
    const triggerId = await triggerOk(ctx(), w.campaignId, { audience: { broadcast: true } }, w.secret);
    await runJobs();
    const res = await control(w, triggerId, 'cancel');
    expect(res.statusCode).toBe(409);
    expect(res.json<{ error: string }>().error).toMatch(/already completed at .*nothing is left to cancel/);
    expect((await status(w, triggerId)).state).toBe('completed');
    const missing = await control(w, '0192f0c4-0000-7000-8000-000000000000', 'cancel');
    expect(missing.statusCode).toBe(404);
    const noCampaign = await json(ctx(), 'POST', `/api/v1/campaigns/nope/triggers/${triggerId}:cancel`, {}, w.secret);
    expect(noCampaign.statusCode).toBe(404);
  });

  it('reschedules a scheduled trigger later or earlier; only while scheduled', async () => {
    const w = await world('resched');
    const first = clock.now() + 10 * MINUTE;
    const triggerId = await triggerOk(
      ctx(),
      w.campaignId,
      { audience: { broadcast: true }, schedule: { at: iso(first) } },
      w.secret,
    );
    const later = first + 20 * MINUTE;
    const res = await control(w, triggerId, 'reschedule', { schedule: { at: iso(later) } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      state: 'scheduled',
      scheduled_at: iso(later),
      audience_evaluated_at: iso(later),
    });
    offset += 15 * MINUTE; // past the first time: nothing
    await runJobs();
    expect(accepted(w.tokens)).toEqual([]);
    const earlier = clock.now() + MINUTE; // before `later`: the job moves earlier too
    expect((await control(w, triggerId, 'reschedule', { schedule: { at: iso(earlier) } })).statusCode).toBe(200);
    offset += 2 * MINUTE;
    await runJobs();
    expect(accepted(w.tokens).sort()).toEqual([...w.tokens].sort());
    expect((await status(w, triggerId)).state).toBe('completed');
    const tooLate = await control(w, triggerId, 'reschedule', { schedule: { at: iso(clock.now() + MINUTE) } });
    expect(tooLate.statusCode).toBe(409);
    expect(tooLate.json<{ error: string }>().error).toMatch(/is completed/);
  });

  it('a reschedule that lands while the job is claimed hands the job back for the new time', async () => {
    const w = await world('resched-race', 1);
    const at = clock.now() + MINUTE;
    const triggerId = await triggerOk(
      ctx(),
      w.campaignId,
      { audience: { broadcast: true }, schedule: { at: iso(at) } },
      w.secret,
    );
    // As if a worker claimed the due job just before the reschedule committed: the job is not pending.
    await sql`update jobs set state = 'running', locked_by = 'elsewhere', locked_until = ${clock.now() + 10 * MINUTE} where job_key = ${`campaign.plan:${triggerId}`}`.execute(
      ctx().database.db,
    );
    const moved = clock.now() + 30 * MINUTE;
    expect((await control(w, triggerId, 'reschedule', { schedule: { at: iso(moved) } })).statusCode).toBe(200);
    await sql`update jobs set state = 'pending', locked_by = null, locked_until = null where job_key = ${`campaign.plan:${triggerId}`}`.execute(
      ctx().database.db,
    );
    offset += 2 * MINUTE;
    const run = await runJobs();
    expect(run.retried).toBe(1);
    expect(accepted(w.tokens)).toEqual([]);
    expect((await status(w, triggerId)).state).toBe('scheduled');
    const job = await sql<{
      run_at: number;
    }>`select run_at from jobs where job_key = ${`campaign.plan:${triggerId}`} and state = 'pending'`.execute(
      ctx().database.db,
    );
    // Due at the new time (give or take the milliseconds between the handler's and the runner's clock reads).
    expect(Number(job.rows[0]!.run_at)).toBeGreaterThanOrEqual(moved);
    expect(Number(job.rows[0]!.run_at)).toBeLessThan(moved + 1000);
    offset += 30 * MINUTE;
    await runJobs();
    expect(accepted(w.tokens)).toEqual(w.tokens);
  });

  it('reschedule checks its body like :trigger does (400 with a message) and honours Idempotency-Key', async () => {
    const w = await world('resched-bad', 1);
    const triggerId = await triggerOk(
      ctx(),
      w.campaignId,
      { audience: { broadcast: true }, schedule: { at: iso(clock.now() + 10 * MINUTE) } },
      w.secret,
    );
    for (const [body, pattern] of [
      [{}, /schedule/],
      [{ schedule: { at: '2026-12-24T09:00:00' } }, /without an offset/],
      [{ schedule: { at: iso(clock.now() - 5 * MINUTE) } }, /in the past/],
      [{ schedule: { at: iso(clock.now() + 400 * 24 * 60 * MINUTE) } }, /more than a year ahead/],
      [{ schedule: { at: iso(clock.now() + MINUTE) }, audience: { broadcast: true } }, /Unexpected field "audience"/],
      [{ schedule: { at: iso(clock.now() + MINUTE), in: 'x' } }, /schedule: unexpected field "in"/],
      [{ schedule: 'tomorrow' }, /schedule: expected an object/],
      [{ schedule: {} }, /schedule\.at: expected an RFC 3339 instant/],
      [{ schedule: { at: 1767000000 } }, /schedule\.at: expected an RFC 3339 instant/],
      [[], /The body must be/],
    ] as const) {
      const res = await control(w, triggerId, 'reschedule', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json<{ error: string }>().error).toMatch(pattern);
    }
    const headers = { ...w.secret, 'idempotency-key': `cancel-${triggerId}` };
    const once = await json(
      ctx(),
      'POST',
      `/api/v1/campaigns/${w.campaignId}/triggers/${triggerId}:cancel`,
      {},
      headers,
    );
    const twice = await json(
      ctx(),
      'POST',
      `/api/v1/campaigns/${w.campaignId}/triggers/${triggerId}:cancel`,
      {},
      headers,
    );
    expect(once.statusCode).toBe(200);
    expect(twice.statusCode).toBe(200);
    expect(twice.headers['idempotent-replayed']).toBe('true');
    expect(twice.json()).toEqual(once.json());
  });

  it('retention counts a scheduled trigger as unfinished: its ledger and ledger partition stay until it ends', async () => {
    const { project, secret } = await ctx().newProject('retention');
    const campaignId = await createCampaign(ctx(), {}, secret);
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { broadcast: true }, schedule: { at: iso(clock.now() + 30 * 24 * 60 * MINUTE) } },
      secret,
    );
    const created = Date.parse((await triggerStatus(ctx(), campaignId, triggerId, secret)).created_at as string);
    const db = ctx().database.db;
    // Even once its creation is past any retention period, it is not a trigger whose ledger may go.
    expect(await expiringLedgerTriggers(db, project.project_id, created + 1, 100)).toEqual([]);
    expect(await hasUnfinishedTriggerBetween(db, created, created + 1)).toBe(true);
  });

  it('documents the schedule, cancel and reschedule in the OpenAPI document with examples', async () => {
    const doc = (await ctx().inject({ method: 'GET', url: '/openapi.json' })).json<{
      paths: Record<string, Record<string, { requestBody?: unknown; responses: Record<string, unknown> }>>;
    }>();
    const paths = Object.keys(doc.paths);
    expect(paths).toContain('/api/v1/campaigns/{campaign_id}/triggers/{trigger_id}:cancel');
    expect(paths).toContain('/api/v1/campaigns/{campaign_id}/triggers/{trigger_id}:reschedule');
    expect(JSON.stringify(doc.paths['/api/v1/campaigns/{campaign_id}:trigger'])).toContain('"schedule"');
    expect(JSON.stringify(doc.paths['/api/v1/campaigns/{campaign_id}/triggers/{trigger_id}:cancel'])).toContain(
      'canceled by request',
    );
  });
});
