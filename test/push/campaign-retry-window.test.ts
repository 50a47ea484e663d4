import { describe, expect, it } from 'vitest';
import { createCampaignJobHandlers } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createCampaign, triggerOk, triggerStatus } from '../campaigns/campaign-helpers.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from './push-helpers.js';

const fakes = useFakeProviders();

describe.each(TEST_DIALECTS)('campaign retry window on %s', (dialect) => {
  const ctx = useTestContext(dialect, {
    overrides: pushOverrides(fakes, {
      runtime: { retry: { maxAttempts: 2, baseDelayMs: 20, maxDelayMs: 50, quotaExceededDelayMs: 50 } },
    }),
  });

  async function setUp(tag: string) {
    const { secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    const hot = fcmToken('quota-');
    await registerDevice(ctx(), secret, 'u', { fcm_token: hot });
    await registerDevice(ctx(), secret, 'u', { fcm_token: fcmToken() });
    const campaignId = await createCampaign(ctx(), {}, secret);
    const triggerId = await triggerOk(ctx(), campaignId, { audience: { targets: [{ project_user_id: 'u' }] } }, secret);
    const clock = { t: Date.now() };
    const run = (retryWindowMs?: number) =>
      runJobsUntilIdle(
        ctx().database.db,
        createCampaignJobHandlers({
          push: ctx().herald.push,
          templates: ctx().herald.templates,
          clock: { now: () => clock.t },
          ...(retryWindowMs === undefined ? {} : { retryWindowMs }),
        }),
        { clock: { now: () => clock.t } },
      );
    return { hot, clock, run, status: () => triggerStatus(ctx(), campaignId, triggerId, secret) };
  }

  it('retries a rate-limited delivery through the job queue for an hour by default, then records it', async () => {
    const w = await setUp('window');
    const attemptsAt = () => fakes().fcm.recorder.items.filter((r) => r.token === w.hot).length;
    await w.run();
    expect((await w.status()).state).toBe('running');
    const afterFirst = attemptsAt();
    w.clock.t += 30 * 60_000;
    await w.run();
    expect((await w.status()).state).toBe('running');
    expect(attemptsAt()).toBeGreaterThan(afterFirst);
    w.clock.t += 31 * 60_000;
    await w.run();
    const st = await w.status();
    expect(st.state).toBe('completed');
    expect(st.counters).toMatchObject({
      devices: 2,
      accepted: 1,
      failed: 1,
      failed_by_status: { DELIVERY_RESULT_STATUS_RATE_LIMITED: 1 },
    });
  });

  it('records at once when the window is zero (CAMPAIGN_RETRY_WINDOW_MS=0)', async () => {
    const w = await setUp('no-window');
    await w.run(0);
    const st = await w.status();
    expect(st.state).toBe('completed');
    expect(st.counters).toMatchObject({ accepted: 1, failed: 1 });
  });
});
