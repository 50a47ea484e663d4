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
import { call, createTopic, putPreferences } from './preference-helpers.js';

describe.each(TEST_DIALECTS)('the subscription gate at fan-out on %s', (dialect) => {
  const fakes = useFakeProviders();
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });
  const accepted = (tokens: string[]) =>
    fakes()
      .fcm.recorder.items.filter((i) => i.status === 200 && tokens.includes(i.token))
      .map((i) => i.token)
      .sort();

  /**
   * Users with one device each: `plain` never chose, `off` opted out of campaign pushes, `nopromo`
   * unsubscribed from promotions (an opt-out topic), `news` subscribed to news (an opt-in topic).
   */
  async function world(tag: string) {
    const { secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    await createTopic(ctx(), { key: 'promotions', default_subscribed: true }, secret);
    await createTopic(ctx(), { key: 'news', default_subscribed: false }, secret);
    const tokens: Record<string, string> = {};
    for (const user of ['plain', 'off', 'nopromo', 'news']) {
      await createUser(ctx(), user, {}, secret);
      tokens[user] = fcmToken();
      await registerDevice(ctx(), secret, user, { fcm_token: tokens[user] });
    }
    await putPreferences(ctx(), 'off', { campaign_pushes: 'unsubscribed' }, secret);
    await putPreferences(ctx(), 'nopromo', { topics: { promotions: 'unsubscribed' } }, secret);
    await putPreferences(ctx(), 'news', { topics: { news: 'subscribed' } }, secret);
    return { secret, tokens, all: Object.values(tokens) };
  }

  it('skips users opted out of campaign pushes or of the topic in a broadcast, and counts them', async () => {
    const w = await world('gate-broadcast');
    const promo = await createCampaign(ctx(), { topic: 'promotions' }, w.secret);
    const promoTrigger = await triggerOk(ctx(), promo, { audience: { broadcast: true } }, w.secret);
    await runFanout(ctx());
    expect(accepted(w.all)).toEqual([w.tokens.plain!, w.tokens.news!].sort());
    expect((await triggerStatus(ctx(), promo, promoTrigger, w.secret)).counters).toMatchObject({
      in_segment: 4,
      eligible: 4,
      devices: 2,
      accepted: 2,
      skipped: { unsubscribed: 2 },
    });

    fakes().fcm.recorder.clear();
    const news = await createCampaign(ctx(), { topic: 'news' }, w.secret);
    const newsTrigger = await triggerOk(ctx(), news, { audience: { broadcast: true } }, w.secret);
    await runFanout(ctx());
    expect(accepted(w.all)).toEqual([w.tokens.news!]);
    expect((await triggerStatus(ctx(), news, newsTrigger, w.secret)).counters).toMatchObject({
      eligible: 4,
      accepted: 1,
      skipped: { unsubscribed: 3 },
    });

    // Without a topic only the global opt-out applies.
    fakes().fcm.recorder.clear();
    const plain = await createCampaign(ctx(), {}, w.secret);
    const plainTrigger = await triggerOk(ctx(), plain, { audience: { broadcast: true } }, w.secret);
    await runFanout(ctx());
    expect(accepted(w.all)).toEqual([w.tokens.plain!, w.tokens.nopromo!, w.tokens.news!].sort());
    expect((await triggerStatus(ctx(), plain, plainTrigger, w.secret)).counters.skipped).toEqual({ unsubscribed: 1 });
  });

  it('a critical campaign reaches users whatever their topics, never one who opted out of campaign pushes', async () => {
    const w = await world('gate-critical');
    const alert = await createCampaign(ctx(), { topic: 'promotions', critical: true }, w.secret);
    const id = await triggerOk(ctx(), alert, { audience: { broadcast: true } }, w.secret);
    await runFanout(ctx());
    expect(accepted(w.all)).toEqual([w.tokens.plain!, w.tokens.nopromo!, w.tokens.news!].sort());
    expect((await triggerStatus(ctx(), alert, id, w.secret)).counters).toMatchObject({
      accepted: 3,
      skipped: { unsubscribed: 1 },
    });
  });

  it('judges each target, answers its verdict, and leaves direct sends alone', async () => {
    const w = await world('gate-targets');
    const promo = await createCampaign(ctx(), { topic: 'promotions' }, w.secret);
    const targets = ['plain', 'off', 'nopromo', 'news'].map((u) => ({ project_user_id: u }));
    const dry = await trigger(ctx(), promo, { audience: { targets } }, { dryRun: true, headers: w.secret });
    expect(dry.statusCode, dry.body).toBe(200);
    expect(dry.json<{ targets: Array<{ reason: string }> }>().targets.map((t) => t.reason)).toEqual([
      'eligible',
      'unsubscribed',
      'unsubscribed',
      'eligible',
    ]);
    const triggerId = await triggerOk(ctx(), promo, { audience: { targets } }, w.secret);
    await runFanout(ctx());
    expect(accepted(w.all)).toEqual([w.tokens.plain!, w.tokens.news!].sort());
    expect((await triggerStatus(ctx(), promo, triggerId, w.secret)).counters).toMatchObject({
      targets: 4,
      in_segment: 4,
      eligible: 4,
      devices: 2,
      skipped: { unsubscribed: 2 },
    });

    // A user who subscribes again is reached by the next trigger (preferences are read at send time).
    fakes().fcm.recorder.clear();
    await putPreferences(ctx(), 'nopromo', { topics: { promotions: 'subscribed' } }, w.secret);
    await triggerOk(ctx(), promo, { audience: { targets: [{ project_user_id: 'nopromo' }] } }, w.secret);
    await runFanout(ctx());
    expect(accepted(w.all)).toEqual([w.tokens.nopromo!]);

    // Direct sends are not campaign pushes.
    fakes().fcm.recorder.clear();
    const direct = await call(
      ctx(),
      'POST',
      '/api/v1/send-push-notifications',
      { push_notifications: [{ target: { project_user_id: 'off' }, title: 'Your code', body: '1234' }] },
      w.secret,
    );
    expect(direct.statusCode, direct.body).toBe(200);
    expect(accepted(w.all)).toEqual([w.tokens.off!]);
  });
});
