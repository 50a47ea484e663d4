import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createCampaignJobHandlers } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { claimSends, rateShape } from '../../src/campaigns/policies/send-rate.js';
import { insertFcmAudience } from '../helpers/bulk-audience.js';
import { manualClock } from '../helpers/clock.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { configureProviders, pushOverrides, useFakeProviders } from '../push/push-helpers.js';
import { createCampaign, triggerOk, triggerStatus } from './campaign-helpers.js';

const MINUTE = 60_000;

/** The most sends in any 60 s window of `(at, n)` grants. */
function busiestMinute(grants: Array<{ at: number; n: number }>): number {
  const sorted = [...grants].sort((a, b) => a.at - b.at);
  let most = 0;
  let sum = 0;
  let lo = 0;
  for (const g of sorted) {
    sum += g.n;
    while (sorted[lo]!.at <= g.at - MINUTE) sum -= sorted[lo++]!.n;
    most = Math.max(most, sum);
  }
  return most;
}

describe.each(TEST_DIALECTS)('send-rate limits (rule `send-rate-limits`) on %s', (dialect) => {
  const fakes = useFakeProviders();
  const clock = manualClock(Date.now());
  const ctx = useTestContext(dialect, {
    overrides: async (database) => ({ ...pushOverrides(fakes)(database), clock }),
  });

  it('six send loops claiming from one campaign never pass the limit in any minute, and keep close to it', async () => {
    const { project, secret } = await ctx().newProject('claims');
    const campaignId = await createCampaign(ctx(), { max_sends_per_minute: 300 }, secret);
    const campaign = { projectId: project.project_id, campaignId };
    const shape = rateShape(300, 100);
    const start = clock.now();
    // Six loops (two per instance on three instances), each claiming as soon as it may.
    const loops = Array.from({ length: 6 }, (_, i) => ({ next: start + i * 7, want: 1 + (i % 4) * 2 }));
    const grants: Array<{ at: number; n: number }> = [];
    for (;;) {
      const loop = loops.reduce((a, b) => (b.next < a.next ? b : a));
      if (loop.next > start + 3 * MINUTE) break;
      clock.set(loop.next);
      const grant = await claimSends(ctx().database.db, campaign, shape, loop.want, loop.next);
      if ('granted' in grant) {
        grants.push({ at: loop.next, n: grant.granted });
        loop.next += 3; // the chunk's sends take a few ms
      } else loop.next += grant.waitMs;
    }
    expect(busiestMinute(grants)).toBeLessThanOrEqual(300);
    const total = grants.reduce((s, g) => s + g.n, 0);
    // Three minutes at the refill rate (limit - burst = 295 a minute) plus the first burst.
    expect(total).toBeGreaterThanOrEqual(3 * 295 - 5);
  });

  it('a rate-limited broadcast paces its batch across job runs, shows expected_end_at, and sends each user once', async () => {
    const { project, secret } = await ctx().newProject('paced');
    await configureProviders(ctx(), secret, fakes());
    const tokens = await insertFcmAudience(ctx().database.db, project.project_id, 70, {
      tokenPrefix: 'paced',
      userPrefix: 'p',
      properties: '{}',
      at: clock.now() - 1000,
    });
    const campaignId = await createCampaign(ctx(), { max_sends_per_minute: 60, quiet_hours: false }, secret);
    const triggerId = await triggerOk(ctx(), campaignId, { audience: { broadcast: true } }, secret);
    const handlers = createCampaignJobHandlers({
      push: ctx().herald.push,
      templates: ctx().herald.templates,
      clock,
      rateWaitInlineMs: 0,
    });
    const started = clock.now();
    await runJobsUntilIdle(ctx().database.db, handlers, { clock });
    const running = await triggerStatus(ctx(), campaignId, triggerId, secret);
    expect(running.state).toBe('running');
    // 69 more at 59 a minute: about 70 s from now.
    const expected = Date.parse(running.expected_end_at as string);
    expect(expected).toBeGreaterThan(started + 60_000);
    expect(expected).toBeLessThan(started + 80_000);
    // Each run sends what the campaign's pace allows and hands its job back until then: go to that instant.
    for (let i = 0; i < 300; i++) {
      const next = await sql<{
        at: number | string | null;
      }>`select min(run_at) as at from jobs where state = 'pending'`.execute(ctx().database.db);
      clock.set(Math.max(clock.now(), Number(next.rows[0]?.at ?? 0)));
      await runJobsUntilIdle(ctx().database.db, handlers, { clock });
      if ((await triggerStatus(ctx(), campaignId, triggerId, secret)).state === 'completed') break;
    }
    const done = await triggerStatus(ctx(), campaignId, triggerId, secret);
    expect(done.state).toBe('completed');
    expect(done.counters.accepted).toBe(70);
    expect(done.expected_end_at).toBeUndefined();
    const rows = await sql<{
      created_at: number | string;
    }>`select created_at from trigger_deliveries where trigger_id = ${triggerId}`.execute(ctx().database.db);
    const grants = rows.rows.map((r) => ({ at: Number(r.created_at), n: 1 }));
    expect(busiestMinute(grants)).toBeLessThanOrEqual(60);
    expect(Math.max(...grants.map((g) => g.at)) - started).toBeGreaterThan(60_000);
    const sent = new Set(
      fakes()
        .fcm.recorder.items.filter((i) => i.status === 200)
        .map((i) => i.token),
    );
    expect(tokens.filter((t) => !sent.has(t))).toEqual([]);
  });
});
