import { sql } from 'kysely';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { claimDuePendingSends } from '../../src/campaigns/event-triggers/pending-sends.repository.js';
import { createDueSendsHandler } from '../../src/campaigns/event-triggers/fire-pending-sends.job.js';
import { createCampaignJobHandlers } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { createJobRunner, enqueueJob, type JobRunner } from '../../src/jobs/jobs.js';
import { claimJobs } from '../../src/jobs/jobs.repository.js';
import { insertFcmAudience } from '../helpers/bulk-audience.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';
import { configureProviders, pushOverrides, useFakeProviders } from '../push/push-helpers.js';
import { json } from './campaign-helpers.js';

type Headers = Record<string, string>;
const HOUR = 3_600_000;

describe.each(TEST_DIALECTS)('event-triggered sends, exactly once, on %s', (dialect) => {
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

  const acceptedPerToken = (tokens: string[]) => {
    const wanted = new Set(tokens);
    const counts = new Map<string, number>();
    for (const item of fakes().fcm.recorder.items)
      if (item.status === 200 && wanted.has(item.token)) counts.set(item.token, (counts.get(item.token) ?? 0) + 1);
    return counts;
  };
  const exactlyOnce = (tokens: string[]) => {
    const counts = acceptedPerToken(tokens);
    expect(tokens.filter((t) => counts.get(t) !== 1)).toEqual([]);
  };
  const ledgerAccepted = async (projectId: string) =>
    Number(
      (
        await sql<{
          n: number;
        }>`select count(*) as n from trigger_deliveries d join campaign_triggers t on t.id = d.trigger_id
          where t.project_id = ${projectId} and d.status = 'DELIVERY_RESULT_STATUS_ACCEPTED'`.execute(ctx().database.db)
      ).rows[0]!.n,
    );

  async function world(tag: string, users: number, delay: string | number = 'PT1H') {
    const { project, secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    const tokens = await insertFcmAudience(ctx().database.db, project.project_id, users, {
      tokenPrefix: 'evt',
      userPrefix: 'b',
      properties: '{}',
      at: clock.now() - 1000,
    });
    const res = await json(
      ctx(),
      'POST',
      '/api/v1/campaigns',
      {
        name: 'Cart',
        status: 'active',
        event_trigger: { event: 'cart_abandoned', delay },
        message: { title: 'Back?', body: '{{ event.properties.items }} items' },
      },
      secret,
    );
    expect(res.statusCode, res.body).toBe(201);
    const events = tokens.map((_, i) => ({
      project_user_id: `b${i}`,
      name: 'cart_abandoned',
      properties: { items: i },
    }));
    for (let i = 0; i < events.length; i += 500) {
      const tracked = await json(ctx(), 'POST', '/api/v1/events', { events: events.slice(i, i + 500) }, secret);
      expect(tracked.statusCode, tracked.body).toBe(200);
    }
    return { project, secret: secret as Headers, tokens, campaignId: res.json<{ campaign_id: string }>().campaign_id };
  }

  const startRunner = async () => {
    const runner = createJobRunner({
      db: ctx().database.db,
      listenPool: ctx().database.listenPool,
      logger: pino({ level: 'silent' }),
      clock,
      handlers: ctx().herald.jobHandlers,
      concurrency: 4,
      pollIntervalMs: 25,
      leaseMs: 30_000,
    });
    runners.push(runner);
    await runner.start();
  };

  it('three job runners fire 450 pending sends due at once: each device gets exactly one send', async () => {
    const w = await world('three', 450);
    offset += HOUR + 5000;
    // Other seconds' jobs due too, so the runners claim pending sends at the same moment.
    for (let i = 0; i < 3; i++)
      await enqueueJob(
        ctx().database.db,
        'campaign.event-sends-due',
        {},
        { clock, jobKey: `extra-${w.project.project_id}-${i}` },
      );
    await Promise.all([startRunner(), startRunner(), startRunner()]);
    await waitFor(async () => (await ledgerAccepted(w.project.project_id)) === 450, {
      timeoutMs: 60_000,
      what: '450 accepted sends',
    });
    await Promise.all(runners.splice(0).map((r) => r.stop()));
    exactlyOnce(w.tokens);
    const fired = await json(ctx(), 'GET', `/api/v1/campaigns/${w.campaignId}/pending-sends`, undefined, w.secret);
    expect(fired.json().counts).toEqual({ pending: 0, fired: 450, canceled: 0, sent: 450 });
  }, 90_000);

  it('a crash between claiming and sending loses nothing and sends nothing twice', async () => {
    const w = await world('crash', 30);
    offset += HOUR + 5000;
    const db = ctx().database.db;
    // 1. An instance claims due sends and dies before its transaction commits: they stay pending.
    await expect(
      db.transaction().execute(async (trx) => {
        expect(await claimDuePendingSends(trx, clock.now(), 10)).toHaveLength(10);
        throw new Error('killed');
      }),
    ).rejects.toThrow('killed');
    // 2. Another fires them (two per claim here, so 15 triggers of two users each), then dies holding
    // 7 of the send-batch jobs it was about to run (lease held, nothing sent).
    const handlers = createCampaignJobHandlers({ push: ctx().herald.push, templates: ctx().herald.templates, clock });
    const fireTwoByTwo = createDueSendsHandler({ clock, claimBatch: 2 });
    await runJobsUntilIdle(db, { 'campaign.event-sends-due': fireTwoByTwo }, { clock });
    const held = await claimJobs(db, {
      lockToken: 'dead-worker',
      now: clock.now(),
      leaseMs: 60_000,
      limit: 7,
      kinds: ['campaign.send-batch'],
    });
    expect(held).toHaveLength(7);
    await runJobsUntilIdle(db, handlers, { clock });
    expect(acceptedPerToken(w.tokens).size).toBe(16);
    // 3. Its leases expire: the held batches run once elsewhere.
    offset += 120_000;
    await runJobsUntilIdle(db, handlers, { clock });
    exactlyOnce(w.tokens);
    expect(await ledgerAccepted(w.project.project_id)).toBe(30);
  });

  it('end to end in real time: an event, a real job runner, and the push stand-in receives the send', async () => {
    const w = await world('realtime', 2, 0);
    await startRunner();
    const received = await waitFor(
      () => {
        const got = fakes().fcm.recorder.items.filter((i) => i.status === 200 && w.tokens.includes(i.token));
        return got.length === 2 && got;
      },
      { timeoutMs: 20_000, what: 'both sends at the FCM stand-in' },
    );
    const bodies = received.map((i) => (i.body as { notification: { body: string } }).notification.body).sort();
    expect(bodies).toEqual(['0 items', '1 items']);
  }, 30_000);
});
