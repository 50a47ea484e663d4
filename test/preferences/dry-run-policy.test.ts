import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import {
  createCampaign,
  createUser,
  runFanout,
  trigger,
  triggerOk,
  triggerStatus,
} from '../campaigns/campaign-helpers.js';
import { createTopic, putPreferences } from './preference-helpers.js';

describe.each(TEST_DIALECTS)('a broadcast dry run counts the send policy on %s', (dialect) => {
  const fakes = useFakeProviders();
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });

  /** `plain`, `off` (global opt-out), `nopromo` (out of promotions), `news` (into news), `bare` (no device, opted out). */
  async function world(tag: string) {
    const { secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    await createTopic(ctx(), { key: 'promotions', default_subscribed: true }, secret);
    await createTopic(ctx(), { key: 'news', default_subscribed: false }, secret);
    for (const user of ['plain', 'off', 'nopromo', 'news', 'bare']) {
      await createUser(ctx(), user, {}, secret);
      if (user !== 'bare') await registerDevice(ctx(), secret, user, { fcm_token: fcmToken() });
    }
    await putPreferences(ctx(), 'off', { campaign_pushes: 'unsubscribed' }, secret);
    await putPreferences(ctx(), 'bare', { campaign_pushes: 'unsubscribed' }, secret);
    await putPreferences(ctx(), 'nopromo', { topics: { promotions: 'unsubscribed' } }, secret);
    await putPreferences(ctx(), 'news', { topics: { news: 'subscribed' } }, secret);
    return secret;
  }
  const dryRun = async (secret: Record<string, string>, campaign: string) => {
    const res = await trigger(ctx(), campaign, { audience: { broadcast: true } }, { dryRun: true, headers: secret });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ counters: Record<string, unknown> }>().counters;
  };
  const counted = (c: Record<string, unknown>) => ({
    in_segment: c.in_segment,
    eligible: c.eligible,
    devices: c.devices,
    skipped: c.skipped,
  });

  it('counts the unsubscribed (topic and global opt-out) as the real trigger does', async () => {
    const secret = await world('dry-policy');
    const cases: [Record<string, unknown>, Record<string, number>][] = [
      [{ topic: 'promotions' }, { unsubscribed: 3 }],
      [{ topic: 'news' }, { unsubscribed: 4 }],
      [{}, { unsubscribed: 2 }],
      [{ topic: 'promotions', critical: true }, { unsubscribed: 2 }],
    ];
    for (const [fields, skipped] of cases) {
      const campaign = await createCampaign(ctx(), fields, secret);
      const dry = await dryRun(secret, campaign);
      expect(dry.skipped, JSON.stringify(fields)).toEqual(skipped);
      const id = await triggerOk(ctx(), campaign, { audience: { broadcast: true } }, secret);
      await runFanout(ctx());
      const real = (await triggerStatus(ctx(), campaign, id, secret)).counters as Record<string, unknown>;
      expect(counted(dry), JSON.stringify(fields)).toEqual(counted(real));
    }
  });

  it('counts the recipients a once-ever or in-window campaign already reached as not_reeligible', async () => {
    const secret = await world('dry-reeligible');
    for (const reeligibility of [{ mode: 'once' }, { mode: 'window', seconds: 3600 }]) {
      const campaign = await createCampaign(ctx(), { reeligibility }, secret);
      expect((await dryRun(secret, campaign)).skipped).toEqual({ unsubscribed: 2 });
      await triggerOk(ctx(), campaign, { audience: { targets: [{ project_user_id: 'plain' }] } }, secret);
      await runFanout(ctx());
      const dry = await dryRun(secret, campaign);
      expect(dry).toMatchObject({ eligible: 5, devices: 2, skipped: { unsubscribed: 2, not_reeligible: 1 } });
      const id = await triggerOk(ctx(), campaign, { audience: { broadcast: true } }, secret);
      await runFanout(ctx());
      const real = (await triggerStatus(ctx(), campaign, id, secret)).counters as Record<string, unknown>;
      expect(real).toMatchObject({ accepted: 2, skipped: { unsubscribed: 2, not_reeligible: 1 } });
    }
  });
});
