import { sql, type Transaction } from 'kysely';
import type { Database } from '../../src/db/database.js';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createCampaignJobHandlers } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { createJobRunner, type JobRunner } from '../../src/jobs/jobs.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import { createCampaign, createUser, json, triggerOk, triggerStatus } from './campaign-helpers.js';

type Headers = Record<string, string>;
const TRIGGERS = 24;

describe.each(TEST_DIALECTS)('re-eligibility (rule `re-eligibility`) and exact counting on %s', (dialect) => {
  const fakes = useFakeProviders();
  let offset = 0;
  const clock = { now: () => Date.now() + offset };
  const ctx = useTestContext(dialect, {
    overrides: async (database) => ({ ...pushOverrides(fakes)(database), clock }),
  });
  const runners: JobRunner[] = [];
  afterEach(async () => {
    await Promise.all(runners.splice(0).map((r) => r.stop()));
  });
  const runJobs = () =>
    runJobsUntilIdle(
      ctx().database.db,
      createCampaignJobHandlers({ push: ctx().herald.push, templates: ctx().herald.templates, clock }),
      { clock },
    );

  async function world(tag: string, users = 1) {
    const { project, secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    const tokens: string[] = [];
    for (let i = 0; i < users; i++) {
      await createUser(ctx(), `u${i}`, {}, secret);
      tokens.push(fcmToken());
      await registerDevice(ctx(), secret, `u${i}`, { fcm_token: tokens[i]! });
    }
    return { projectId: project.project_id, secret: secret as Headers, tokens };
  }
  const send = async (secret: Headers, campaignId: string) => {
    const id = await triggerOk(ctx(), campaignId, { audience: { targets: [{ project_user_id: 'u0' }] } }, secret);
    await runJobs();
    const status = await triggerStatus(ctx(), campaignId, id, secret);
    expect(status.state).toBe('completed');
    return status.counters;
  };
  const acceptedPerToken = (tokens: string[]) => {
    const counts = new Map<string, number>();
    for (const item of fakes().fcm.recorder.items)
      if (item.status === 200 && tokens.includes(item.token)) counts.set(item.token, (counts.get(item.token) ?? 0) + 1);
    return tokens.map((t) => counts.get(t) ?? 0);
  };

  it('`once`: a user who received the campaign is skipped `NOT_REELIGIBLE` ever after', async () => {
    const { secret } = await world('once');
    const campaignId = await createCampaign(ctx(), { reeligibility: { mode: 'once' } }, secret);
    expect((await send(secret, campaignId)).accepted).toBe(1);
    offset += 400 * 86_400_000;
    expect(await send(secret, campaignId)).toMatchObject({ accepted: 0, skipped: { not_reeligible: 1 } });
    const analytics = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/analytics`, undefined, secret);
    expect(analytics.json().totals.by_reason).toMatchObject({ NOT_REELIGIBLE: 1 });
    // Another campaign is not affected.
    expect(
      (await send(secret, await createCampaign(ctx(), { reeligibility: { mode: 'once' } }, secret))).accepted,
    ).toBe(1);
  });

  it('`window`: eligible again once the window since the last send has passed; `always` (the default) sends every time', async () => {
    const { secret } = await world('window');
    const campaignId = await createCampaign(ctx(), { reeligibility: { mode: 'window', seconds: 60 } }, secret);
    expect((await send(secret, campaignId)).accepted).toBe(1);
    offset += 59_000;
    expect((await send(secret, campaignId)).skipped).toEqual({ not_reeligible: 1 });
    offset += 2_000;
    expect((await send(secret, campaignId)).accepted).toBe(1);
    const always = await createCampaign(ctx(), {}, secret);
    for (let i = 0; i < 3; i++) expect((await send(secret, always)).accepted).toBe(1);
    // Neither caps nor re-eligibility asked for a slot: nothing was logged for `always`.
    const logged = await sql<{ n: number }>`select count(*) as n from user_sends where campaign_id = ${always}`.execute(
      ctx().database.db,
    );
    expect(Number(logged.rows[0]!.n)).toBe(0);
  });

  it('applies to each event-triggered send', async () => {
    const { secret } = await world('events');
    const created = await json(
      ctx(),
      'POST',
      '/api/v1/campaigns',
      {
        name: 'Cart',
        status: 'active',
        event_trigger: { event: 'cart_abandoned', delay: 0 },
        reeligibility: { mode: 'once' },
        message: { title: 'Back?' },
      },
      secret,
    );
    expect(created.statusCode, created.body).toBe(201);
    const campaignId = created.json<{ campaign_id: string }>().campaign_id;
    for (let i = 0; i < 2; i++) {
      const tracked = await json(
        ctx(),
        'POST',
        '/api/v1/events',
        { events: [{ project_user_id: 'u0', name: 'cart_abandoned', properties: {} }] },
        secret,
      );
      expect(tracked.statusCode, tracked.body).toBe(200);
      offset += 2_000;
      await runJobs();
    }
    // Due sends are claimed by a job once a second: let the last one fire.
    offset += 5_000;
    await runJobs();
    const pending = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/pending-sends`, undefined, secret);
    expect(pending.json()).toMatchObject({ counts: { fired: 2, sent: 1 } });
    const list = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/triggers`, undefined, secret);
    const ids = list.json<{ triggers: { trigger_id: string }[] }>().triggers.map((t) => t.trigger_id);
    const triggers = await Promise.all(ids.map((id) => triggerStatus(ctx(), campaignId, id, secret)));
    expect(triggers).toHaveLength(2);
    expect(triggers.map((t) => t.counters.accepted).sort()).toEqual([0, 1]);
    expect(triggers.flatMap((t) => Object.entries(t.counters.skipped))).toEqual([['not_reeligible', 1]]);
  });

  const startRunner = async () => {
    const runner = createJobRunner({
      db: ctx().database.db,
      listenPool: ctx().database.listenPool,
      logger: pino({ level: 'silent' }),
      clock,
      handlers: ctx().herald.jobHandlers,
      concurrency: 8,
      pollIntervalMs: 25,
      leaseMs: 30_000,
    });
    runners.push(runner);
    await runner.start();
  };
  const finished = async (projectId: string) =>
    Number(
      (
        await sql<{ n: number }>`select count(*) as n from campaign_triggers
          where project_id = ${projectId} and state = 'completed'`.execute(ctx().database.db)
      ).rows[0]!.n,
    );

  /** Locks `user_sends` against writes until the answer is called and some transaction waits on a lock. */
  async function holdSendLogWrites(): Promise<() => Promise<void>> {
    const db = ctx().database.db;
    let unlock!: () => void;
    const held = new Promise<void>((resolve) => (unlock = resolve));
    let locked!: (trx: Transaction<Database>) => void;
    const ready = new Promise<Transaction<Database>>((resolve) => (locked = resolve));
    const holder = db.transaction().execute(async (trx) => {
      await sql`lock table user_sends in exclusive mode`.execute(trx);
      locked(trx);
      await held;
    });
    // Watched through the holding transaction's own connection: the waiting batches may hold every
    // other connection of the pool.
    const watch = await ready;
    return async () => {
      await waitFor(
        async () =>
          Number(
            (await sql<{ n: number }>`select count(*) as n from pg_locks where not granted`.execute(watch)).rows[0]!.n,
          ) >= 3,
        { timeoutMs: 30_000, what: 'batches waiting on the send log' },
      );
      unlock();
      await holder;
    };
  }

  it('three job runners sending 24 triggers of each campaign at once: no user gets more than the cap, or a `once` campaign twice', async () => {
    const users = 12;
    const caps = await world('three-caps', users);
    const put = await ctx().inject({
      method: 'PUT',
      url: '/api/v1/project/frequency-caps',
      headers: { ...caps.secret, 'content-type': 'application/json' },
      payload: JSON.stringify({ rules: [{ max: 3, per: 'day' }] }),
    });
    expect(put.statusCode, put.body).toBe(200);
    const capped = await createCampaign(ctx(), {}, caps.secret);
    const once = await world('three-once', users);
    const onceCampaign = await createCampaign(ctx(), { reeligibility: { mode: 'once' } }, once.secret);
    for (let i = 0; i < TRIGGERS; i++) {
      await triggerOk(ctx(), capped, { audience: { broadcast: true } }, caps.secret);
      await triggerOk(ctx(), onceCampaign, { audience: { broadcast: true } }, once.secret);
    }
    // PostgreSQL: hold writes to the send log until the runners' batches are all under way, so their
    // checks meet at the last slot (each would read a free slot without the per-user lock).
    const release = dialect === 'postgres' ? await holdSendLogWrites() : async () => {};
    await Promise.all([startRunner(), startRunner(), startRunner()]);
    await release();
    await waitFor(
      async () => (await finished(caps.projectId)) === TRIGGERS && (await finished(once.projectId)) === TRIGGERS,
      {
        timeoutMs: 60_000,
        what: 'sixteen completed triggers',
      },
    );
    expect(acceptedPerToken(caps.tokens)).toEqual(caps.tokens.map(() => 3));
    expect(acceptedPerToken(once.tokens)).toEqual(once.tokens.map(() => 1));
  }, 90_000);
});
