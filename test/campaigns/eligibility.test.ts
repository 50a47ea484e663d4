import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { claimSends, rateShape } from '../../src/campaigns/policies/send-rate.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import {
  configureProviders,
  fcmToken,
  pushOverrides,
  put,
  registerDevice,
  useFakeProviders,
} from '../push/push-helpers.js';
import { createTopic, putPreferences } from '../preferences/preference-helpers.js';
import { createCampaign, createUser, json, runFanout, triggerOk, triggerStatus } from './campaign-helpers.js';

type Headers = Record<string, string>;
type Gate = {
  gate: string;
  verdict: string;
  reason: string | null;
  summary: string;
  data: Record<string, unknown> & { rules: Array<{ window_start: string }>; held_until: string; wait_ms: number };
};
type Answer = { campaign_id: string; project_user_id: string; eligible: boolean; evaluated_at: string; gates: Gate[] };
const MINUTE = 60_000;
const ORDER = [
  'segment',
  'audience',
  'devices',
  'topic',
  'global_opt_out',
  'reeligibility',
  'frequency_caps',
  'quiet_hours',
  'rate_limit',
];
const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

describe.each(TEST_DIALECTS)('eligibility: why was this not sent, on %s', (dialect) => {
  const fakes = useFakeProviders();
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });

  async function world(tag: string, users: Record<string, Record<string, unknown>> = { u1: { plan: 'pro' } }) {
    const { project, secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    for (const [id, properties] of Object.entries(users)) {
      await createUser(ctx(), id, properties, secret);
      await registerDevice(ctx(), secret, id, { fcm_token: fcmToken(`${tag}-${id}-`) });
    }
    return { project, secret: secret as Headers };
  }
  const ask = (secret: Headers, campaignId: string, query: string) =>
    json(ctx(), 'GET', `/api/v1/campaigns/${encodeURIComponent(campaignId)}/eligibility?${query}`, undefined, secret);
  const explain = async (secret: Headers, campaignId: string, user: string, triggerId?: string) => {
    const res = await ask(secret, campaignId, `project_user_id=${user}${triggerId ? `&trigger_id=${triggerId}` : ''}`);
    expect(res.statusCode, res.body).toBe(200);
    const answer = res.json<Answer>();
    expect(answer.gates.map((g) => g.gate)).toEqual(ORDER);
    return { ...answer, gate: (name: string) => answer.gates.find((g) => g.gate === name)! };
  };
  /** Triggers the campaign for these users and runs the fan-out; the trigger's counters. */
  const send = async (secret: Headers, campaignId: string, users: string[]) => {
    const id = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets: users.map((u) => ({ project_user_id: u })) } },
      secret,
    );
    await runFanout(ctx());
    return (await triggerStatus(ctx(), campaignId, id, secret)).counters;
  };
  const slots = async (projectId: string) =>
    Number(
      (
        await sql<{ n: number }>`select count(*) as n from user_sends where project_id = ${projectId}`.execute(
          ctx().database.db,
        )
      ).rows[0]!.n,
    );

  it('every gate passing, in order, with the data each read', async () => {
    const { secret } = await world('pass');
    await createTopic(ctx(), { key: 'news', default_subscribed: true }, secret);
    await put(ctx(), secret, '/api/v1/project/frequency-caps', { rules: [{ max: 3, per: 'day' }] });
    const away = Date.now() + 6 * 60 * MINUTE;
    const campaignId = await createCampaign(
      ctx(),
      {
        segment: { property: 'plan', op: 'eq', value: 'pro' },
        topic: 'news',
        reeligibility: { mode: 'window', seconds: 3600 },
        quiet_hours: { start: hhmm(away), end: hhmm(away + 60 * MINUTE) },
        max_sends_per_minute: 600,
      },
      secret,
    );
    const answer = await explain(secret, campaignId, 'u1');
    expect(answer).toMatchObject({ campaign_id: campaignId, project_user_id: 'u1', eligible: true });
    expect(Math.abs(Date.parse(answer.evaluated_at) - Date.now())).toBeLessThan(MINUTE);
    expect(answer.gates.map((g) => [g.gate, g.verdict, g.reason])).toEqual([
      ['segment', 'pass', null],
      ['audience', 'not_applicable', null],
      ['devices', 'pass', null],
      ['topic', 'pass', null],
      ['global_opt_out', 'pass', null],
      ['reeligibility', 'pass', null],
      ['frequency_caps', 'pass', null],
      ['quiet_hours', 'pass', null],
      ['rate_limit', 'pass', null],
    ]);
    for (const g of answer.gates) expect(g.summary.length).toBeGreaterThan(10);
    expect(answer.gate('segment').data).toEqual({
      condition: { property: 'plan', op: 'eq', value: 'pro' },
      user_properties: { plan: 'pro' },
      events: [],
    });
    expect(answer.gate('devices').data).toEqual({ active_devices: 1, by_provider: { fcm: 1 } });
    expect(answer.gate('topic').data).toEqual({
      topic: 'news',
      default_subscribed: true,
      user_choice: null,
      state: 'subscribed',
    });
    expect(answer.gate('reeligibility').data).toMatchObject({
      mode: 'window',
      seconds: 3600,
      last_sent_in_period_at: null,
    });
    expect(answer.gate('frequency_caps').data.rules).toEqual([
      expect.objectContaining({ max: 3, per: 'day', count: 0, reached: false }),
    ]);
    expect(answer.gate('quiet_hours').data).toMatchObject({ time_zone: 'UTC', held_until: null, user_window: null });
    expect(answer.gate('rate_limit').data).toMatchObject({ max_sends_per_minute: 600, wait_ms: 0 });
  });

  it('segment, devices, topic and global opt-out failing, each with the reason the fan-out records', async () => {
    const { secret } = await world('fails', { pro: { plan: 'pro' }, free: { plan: 'free' } });
    await createUser(ctx(), 'bare', { plan: 'pro' }, secret);
    await createTopic(ctx(), { key: 'promo', default_subscribed: true }, secret);
    const campaignId = await createCampaign(
      ctx(),
      { segment: { property: 'plan', op: 'eq', value: 'pro' }, topic: 'promo' },
      secret,
    );
    const free = await explain(secret, campaignId, 'free');
    expect(free.eligible).toBe(false);
    expect(free.gate('segment')).toMatchObject({ verdict: 'fail', reason: 'NOT_IN_SEGMENT' });
    expect(free.gate('segment').data.user_properties).toEqual({ plan: 'free' });
    // Every gate is evaluated, whatever the others say.
    expect(free.gate('devices').verdict).toBe('pass');

    const bare = await explain(secret, campaignId, 'bare');
    expect(bare.gate('devices')).toMatchObject({ verdict: 'fail', reason: 'NO_DEVICE', data: { active_devices: 0 } });

    await putPreferences(ctx(), 'pro', { topics: { promo: 'unsubscribed' } }, secret);
    const topic = await explain(secret, campaignId, 'pro');
    expect(topic.eligible).toBe(false);
    expect(topic.gate('topic')).toMatchObject({
      verdict: 'fail',
      reason: 'UNSUBSCRIBED',
      data: { topic: 'promo', default_subscribed: true, user_choice: 'unsubscribed', state: 'unsubscribed' },
    });
    expect(topic.gate('global_opt_out').verdict).toBe('pass');
    await putPreferences(ctx(), 'pro', { campaign_pushes: 'unsubscribed', topics: { promo: 'subscribed' } }, secret);
    const global = await explain(secret, campaignId, 'pro');
    expect(global.gate('topic').verdict).toBe('pass');
    expect(global.gate('global_opt_out')).toMatchObject({
      verdict: 'fail',
      reason: 'UNSUBSCRIBED',
      data: { campaign_pushes: 'unsubscribed' },
    });
    // The fan-out agrees: the same users skipped for the same reasons.
    const counters = await send(secret, campaignId, ['free', 'bare', 'pro']);
    expect(counters.skipped).toMatchObject({ not_in_segment: 1, no_device: 1, unsubscribed: 1 });
    // Analytics count them too, per audience member (no device was tried, so no ledger row holds them).
    const analytics = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/analytics`, undefined, secret);
    expect(analytics.json<{ totals: { users_by_reason: unknown } }>().totals.users_by_reason).toEqual({
      NOT_IN_SEGMENT: 1,
      NO_DEVICE: 1,
      UNSUBSCRIBED: 1,
    });
    // A critical campaign ignores topics, never the global opt-out.
    await json(ctx(), 'PATCH', `/api/v1/campaigns/${campaignId}`, { critical: true }, secret);
    await putPreferences(ctx(), 'pro', { campaign_pushes: 'subscribed', topics: { promo: 'unsubscribed' } }, secret);
    const critical = await explain(secret, campaignId, 'pro');
    expect(critical.gate('topic').verdict).toBe('not_applicable');
    expect(critical.gate('frequency_caps').verdict).toBe('not_applicable');
    expect(critical.gate('quiet_hours').verdict).toBe('not_applicable');
    expect(critical.eligible).toBe(true);
  });

  it('re-eligibility and caps fail as the fan-out then skips; explaining takes no slot', async () => {
    const { project, secret } = await world('caps');
    await put(ctx(), secret, '/api/v1/project/frequency-caps', { rules: [{ max: 1, per: { hours: 4 } }] });
    const once = await createCampaign(ctx(), { reeligibility: { mode: 'once' } }, secret);
    const other = await createCampaign(ctx(), {}, secret);
    // Explaining many times takes nothing: the send after it still goes.
    for (let i = 0; i < 3; i++) expect((await explain(secret, once, 'u1')).eligible).toBe(true);
    expect(await slots(project.project_id)).toBe(0);
    expect((await send(secret, once, ['u1'])).accepted).toBe(1);
    expect(await slots(project.project_id)).toBe(1);

    const again = await explain(secret, once, 'u1');
    expect(again.gate('reeligibility')).toMatchObject({
      verdict: 'fail',
      reason: 'NOT_REELIGIBLE',
      data: { mode: 'once', eligible_again_at: null },
    });
    expect(again.gate('reeligibility').data.last_sent_in_period_at).toEqual(expect.any(String));
    const capped = await explain(secret, other, 'u1');
    expect(capped.eligible).toBe(false);
    expect(capped.gate('reeligibility').verdict).toBe('not_applicable');
    const rule = capped.gate('frequency_caps');
    expect(rule).toMatchObject({ verdict: 'fail', reason: 'FREQUENCY_CAPPED' });
    expect(rule.data.rules).toEqual([expect.objectContaining({ max: 1, per: { hours: 4 }, count: 1, reached: true })]);
    expect(Date.now() - Date.parse(rule.data.rules[0]!.window_start)).toBeGreaterThanOrEqual(4 * 60 * MINUTE - MINUTE);
    expect(await slots(project.project_id)).toBe(1);
    expect((await send(secret, once, ['u1'])).skipped).toMatchObject({ not_reeligible: 1 });
    expect((await send(secret, other, ['u1'])).skipped).toMatchObject({ frequency_capped: 1 });
    // respect_caps: false is not checked.
    await json(ctx(), 'PATCH', `/api/v1/campaigns/${other}`, { respect_caps: false }, secret);
    expect((await explain(secret, other, 'u1')).gate('frequency_caps').verdict).toBe('not_applicable');
  });

  it('quiet hours hold until the window ends; the rate limit holds without taking from the budget', async () => {
    const { project, secret } = await world('hold');
    const now = Date.now();
    const quiet = await createCampaign(
      ctx(),
      { quiet_hours: { start: hhmm(now - 2 * MINUTE), end: hhmm(now + 30 * MINUTE) } },
      secret,
    );
    const held = (await explain(secret, quiet, 'u1')).gate('quiet_hours');
    expect(held).toMatchObject({ verdict: 'hold', reason: null, data: { time_zone: 'UTC' } });
    const until = Date.parse(held.data.held_until);
    expect(until).toBeGreaterThan(now + 28 * MINUTE);
    expect(until).toBeLessThanOrEqual(now + 31 * MINUTE);
    // The fan-out holds the user the same way; status and analytics count the hold.
    const id = await triggerOk(ctx(), quiet, { audience: { targets: [{ project_user_id: 'u1' }] } }, secret);
    await runFanout(ctx());
    expect((await triggerStatus(ctx(), quiet, id, secret)).counters.held).toBe(1);
    const analytics = await json(
      ctx(),
      'GET',
      `/api/v1/campaigns/${quiet}/triggers/${id}/analytics`,
      undefined,
      secret,
    );
    expect(analytics.json<{ totals: { users_by_reason: unknown } }>().totals.users_by_reason).toEqual({ HELD: 1 });
    // A user's own window in their zone.
    const dnd = await createCampaign(ctx(), { quiet_hours: false }, secret);
    expect((await explain(secret, dnd, 'u1')).gate('quiet_hours').verdict).toBe('not_applicable');
    await json(ctx(), 'PATCH', '/api/v1/users/u1', { properties: { time_zone: 'Asia/Tokyo' } }, secret);
    const tokyo = now + 9 * 60 * MINUTE;
    const res = await put(ctx(), secret, '/api/v1/users/u1/quiet-hours', {
      quiet_hours: { start: hhmm(tokyo - 5 * MINUTE), end: hhmm(tokyo + 10 * MINUTE) },
    });
    expect(res.statusCode, res.body).toBe(200);
    const own = (await explain(secret, dnd, 'u1')).gate('quiet_hours');
    expect(own).toMatchObject({ verdict: 'hold', data: { time_zone: 'Asia/Tokyo', campaign_window: null } });

    const limited = await createCampaign(ctx(), { max_sends_per_minute: 60 }, secret);
    const campaign = { projectId: project.project_id, campaignId: limited };
    expect((await explain(secret, limited, 'u1')).gate('rate_limit').verdict).toBe('pass');
    const tat = () =>
      ctx()
        .database.db.selectFrom('campaign_send_rates')
        .select('tat_us')
        .where('campaign_id', '=', limited)
        .executeTakeFirst();
    expect(await tat()).toBeUndefined(); // asking made no bucket
    expect(await claimSends(ctx().database.db, campaign, rateShape(60, 100), 1, Date.now())).toEqual({ granted: 1 });
    const before = await tat();
    const wait = (await explain(secret, limited, 'u1')).gate('rate_limit');
    expect(wait).toMatchObject({ verdict: 'hold', reason: null, data: { max_sends_per_minute: 60 } });
    expect(wait.data.wait_ms).toBeGreaterThan(0);
    expect(await tat()).toEqual(before);
  });

  it("with trigger_id: that trigger's audience conditions and policy; without: the campaign's and none", async () => {
    const { secret } = await world('trigger', { u1: { city: 'Lyon' } });
    const campaignId = await createCampaign(
      ctx(),
      { audience_conditions: { property: 'city', op: 'eq', value_from: 'trigger.city' } },
      secret,
    );
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets: [{ project_user_id: 'u1' }] }, properties: { city: 'Paris' } },
      secret,
    );
    await json(ctx(), 'PATCH', `/api/v1/campaigns/${campaignId}`, { reeligibility: { mode: 'once' } }, secret);
    const of = await explain(secret, campaignId, 'u1', triggerId);
    expect(of.eligible).toBe(false);
    expect(of.gate('audience')).toMatchObject({
      verdict: 'fail',
      reason: 'AUDIENCE_CONDITIONS',
      data: { condition: { property: 'city', op: 'eq', value: 'Paris' }, user_properties: { city: 'Lyon' } },
    });
    // The trigger's policy as it stored it, not the campaign's since.
    expect(of.gate('reeligibility').data).toEqual({ mode: 'always' });
    const current = await explain(secret, campaignId, 'u1');
    expect(current.eligible).toBe(true);
    expect(current.gate('audience').verdict).toBe('not_applicable');
    expect(current.gate('reeligibility')).toMatchObject({ verdict: 'pass', data: { mode: 'once' } });
    await runFanout(ctx());
    expect((await triggerStatus(ctx(), campaignId, triggerId, secret)).counters.skipped).toMatchObject({
      audience_conditions: 1,
    });
  });

  it('404 for an unknown campaign, trigger or user (or another project); 400 for a bad query; 401 without the secret key', async () => {
    const { secret } = await world('errors');
    const campaignId = await createCampaign(ctx(), {}, secret);
    const { secret: otherSecret } = await ctx().newProject('errors-other');
    const cases: Array<[Headers, string, string, number, RegExp]> = [
      [secret, 'no-such-campaign', 'project_user_id=u1', 404, /Campaign no-such-campaign does not exist/],
      [otherSecret, campaignId, 'project_user_id=u1', 404, /does not exist/],
      [secret, campaignId, 'project_user_id=nobody', 404, /User nobody does not exist/],
      [
        secret,
        campaignId,
        'project_user_id=u1&trigger_id=0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
        404,
        /Trigger 0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b does not exist/,
      ],
      [secret, campaignId, '', 400, /project_user_id/],
      [secret, campaignId, 'project_user_id=', 400, /project_user_id/],
      [secret, campaignId, 'project_user_id=u1&trigger_id=nope', 400, /trigger_id/],
    ];
    for (const [headers, id, query, status, message] of cases) {
      const res = await ask(headers, id, query);
      expect(res.statusCode, `${id}?${query}: ${res.body}`).toBe(status);
      expect(res.json<{ error: string }>().error).toMatch(message);
    }
    const anonymous = await json(
      ctx(),
      'GET',
      `/api/v1/campaigns/${campaignId}/eligibility?project_user_id=u1`,
      undefined,
      {},
    );
    expect(anonymous.statusCode).toBe(401);
  });
});
