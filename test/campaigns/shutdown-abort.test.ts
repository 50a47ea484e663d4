import { describe, expect, it } from 'vitest';
import { createCampaignJobHandlers } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { createJobRunner } from '../../src/jobs/jobs.js';
import { systemClock } from '../../src/lib/clock.js';
import { SEND_ABORTED } from '../../src/push/push-dispatch.js';
import { silentLogger } from '../jobs/test-jobs.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import { createCampaign, createUser, triggerOk } from './campaign-helpers.js';

/**
 * A batch on its last attempt when its worker's shutdown deadline comes, with sends waiting at a
 * slow provider: the sends are cut short, none of them is put in the ledger (their outcome is
 * unknown, so the batch's next run sends them again), and the job is handed back uncounted.
 */
describe.each(TEST_DIALECTS)('a campaign batch cut short at shutdown on %s', (dialect) => {
  const fakes = useFakeProviders();
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });

  it('records no cut-short send as final and hands the batch back, even on its last attempt', async () => {
    const { db } = ctx().database;
    const { secret } = await ctx().newProject('shutdown-abort');
    await configureProviders(ctx(), secret, fakes());
    const users = ['fast', 'slow-1', 'slow-2', 'slow-3'];
    const devices = new Map<string, string>();
    for (const user of users) {
      await createUser(ctx(), user, { plan: 'pro' }, secret);
      const token = fcmToken(user === 'fast' ? '' : 'slow-5000-');
      devices.set(user, await registerDevice(ctx(), secret, user, { fcm_token: token }));
    }
    const campaignId = await createCampaign(
      ctx(),
      { segment: { property: 'plan', op: 'eq', value: 'pro' }, message: { title: 'Hi' } },
      secret,
    );
    const triggerId = await triggerOk(ctx(), campaignId, { audience: { broadcast: true } }, secret);
    const handlers = createCampaignJobHandlers({
      push: ctx().herald.push,
      templates: ctx().herald.templates,
      clock: systemClock,
    });
    const runner = (kinds: Partial<typeof handlers>, drainTimeoutMs = 10_000) =>
      createJobRunner({
        db,
        logger: silentLogger,
        handlers: kinds,
        concurrency: 2,
        pollIntervalMs: 20,
        leaseMs: 60_000,
        drainTimeoutMs,
      });

    // Plan only, then make the batch's next run its last attempt.
    const planner = runner({ 'campaign.plan': handlers['campaign.plan'] });
    await planner.start();
    await waitFor(
      async () =>
        (await db.selectFrom('jobs').select('id').where('kind', '=', 'campaign.send-batch').execute()).length === 1,
      { what: 'the batch job' },
    );
    await planner.stop();
    await db.updateTable('jobs').set({ max_attempts: 1 }).where('kind', '=', 'campaign.send-batch').execute();

    const held = fakes().fcm.delayed;
    const sender = runner({ 'campaign.send-batch': handlers['campaign.send-batch'] }, 200);
    await sender.start();
    await waitFor(() => fakes().fcm.delayed >= held + 3, { what: 'the slow sends at the provider' });
    const stopAt = Date.now();
    await sender.stop();
    expect(Date.now() - stopAt).toBeLessThan(3000); // the 5-s answers were not waited for

    const ledger = await db
      .selectFrom('trigger_deliveries')
      .select(['device_id', 'status'])
      .where('trigger_id', '=', triggerId)
      .execute();
    expect(ledger).toEqual([{ device_id: devices.get('fast'), status: 'DELIVERY_RESULT_STATUS_ACCEPTED' }]);
    const aborted = await db
      .selectFrom('deliveries')
      .select('device_id')
      .where('trigger_id', '=', triggerId)
      .where('failure_reason', '=', SEND_ABORTED)
      .execute();
    expect(aborted.map((d) => d.device_id).sort()).toEqual(
      ['slow-1', 'slow-2', 'slow-3'].map((u) => devices.get(u)).sort(),
    );
    const job = await db
      .selectFrom('jobs')
      .select(['state', 'attempts', 'locked_by'])
      .where('kind', '=', 'campaign.send-batch')
      .executeTakeFirstOrThrow();
    expect(job).toEqual({ state: 'pending', attempts: 0, locked_by: null });
  });
});
