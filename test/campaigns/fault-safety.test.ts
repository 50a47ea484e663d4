import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createCampaignJobHandlers } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { claimJobs } from '../../src/jobs/jobs.repository.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { systemClock } from '../../src/lib/clock.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import { createCampaign, createUser, runFanout, triggerOk, triggerStatus } from './campaign-helpers.js';

type Counters = Awaited<ReturnType<typeof triggerStatus>>['counters'];
const skippedSends = (c: Counters) =>
  Object.entries(c.skipped)
    .filter(([k]) => !['not_found', 'not_in_segment', 'audience_conditions', 'no_device'].includes(k))
    .reduce((n, [, v]) => n + v, 0);

describe.each(TEST_DIALECTS)('campaign fault safety on %s', (dialect) => {
  const fakes = useFakeProviders();
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });

  async function targeted(tag: string, tokens: string[]) {
    const { secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    await createUser(ctx(), 'u1', { plan: 'pro' }, secret);
    for (const token of tokens) await registerDevice(ctx(), secret, 'u1', { fcm_token: token });
    const campaignId = await createCampaign(
      ctx(),
      { segment: { property: 'plan', op: 'eq', value: 'pro' }, message: { title: 'Hi', body: 'There' } },
      secret,
    );
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets: [{ project_user_id: 'u1' }] } },
      secret,
    );
    return { secret, campaignId, triggerId, status: () => triggerStatus(ctx(), campaignId, triggerId, secret) };
  }
  const accepted = (tokens: string[]) =>
    fakes().fcm.recorder.items.filter((i) => i.status === 200 && tokens.includes(i.token)).length;

  it("keeps tokens_pruned when the batch is retried (the pruned device is gone from the retry's audience)", async () => {
    const gone = `unregistered-${fcmToken()}`;
    const flaky = `unavailable-7-${fcmToken()}`;
    const ok = fcmToken();
    const t = await targeted('pruned-retry', [gone, flaky, ok]);
    await runFanout(ctx());
    expect((await t.status()).state).toBe('running');
    // The flaky token fails 7 times: how many runs that takes depends on the retries each run fits in.
    for (let run = 1; run <= 6 && (await t.status()).state === 'running'; run++)
      await runFanout(ctx(), { laterByMs: run * 3_600_000 });
    const st = await t.status();
    expect(st.state).toBe('completed');
    expect(st.counters).toMatchObject({ devices: 3, accepted: 2, failed: 1, tokens_pruned: 1 });
    expect(st.counters.devices).toBe(st.counters.accepted + st.counters.failed + skippedSends(st.counters));
    expect(accepted([gone, flaky, ok])).toBe(2);
  });

  it('finalises a batch whose worker died during its last attempt: the trigger fails, counters add up, nothing is sent', async () => {
    const tokens = [fcmToken(), fcmToken()];
    const t = await targeted('lost-last-attempt', tokens);
    const handlers = createCampaignJobHandlers({
      push: ctx().herald.push,
      templates: ctx().herald.templates,
      clock: systemClock,
    });
    await runJobsUntilIdle(ctx().database.db, { 'campaign.plan': handlers['campaign.plan'] });
    const db = ctx().database.db;
    // The batch's last attempt is claimed by a worker that then dies (its lease just runs out).
    const payloadText = dialect === 'postgres' ? sql`payload::text` : sql`payload`;
    await sql`update jobs set attempts = max_attempts - 1 where kind = 'campaign.send-batch' and state = 'pending' and ${payloadText} like ${`%${t.triggerId}%`}`.execute(
      db,
    );
    const [claimed] = await claimJobs(db, {
      lockToken: 'dead-worker/1',
      now: Date.now(),
      leaseMs: 1000,
      limit: 1,
      kinds: ['campaign.send-batch'],
    });
    expect(claimed).toBeDefined();
    expect(claimed!.attempts).toBe(claimed!.max_attempts);
    expect((await t.status()).state).toBe('running');

    const result = await runFanout(ctx(), { laterByMs: 2000 });
    expect(result).toMatchObject({ dead: 1 });
    const st = await t.status();
    expect(st.state).toBe('failed');
    expect(st.counters).toMatchObject({
      devices: 2,
      accepted: 0,
      failed: 2,
      failed_by_status: { DELIVERY_RESULT_STATUS_FAILED: 2 },
    });
    expect(st.counters.devices).toBe(st.counters.accepted + st.counters.failed + skippedSends(st.counters));
    expect(accepted(tokens)).toBe(0);
  });

  it('a trigger whose planning spent its attempts is failed, not left running', async () => {
    const t = await targeted('lost-plan', [fcmToken()]);
    const db = ctx().database.db;
    await sql`update jobs set attempts = max_attempts where kind = 'campaign.plan' and state = 'pending'`.execute(db);
    // attempts at the maximum: its next claim is the finalisation run.
    const result = await runFanout(ctx());
    expect(result.dead).toBeGreaterThanOrEqual(1);
    const st = await t.status();
    expect(st.state).toBe('failed');
    expect(st.error).toMatch(/planning failed/);
  });
});
