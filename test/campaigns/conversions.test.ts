import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createWebhook } from '../webhooks/webhook-helpers.js';
import {
  configureProviders,
  fcmToken,
  pushOverrides,
  registerDevice,
  sendToDevices,
  TEST_SECRET_KEY,
  useFakeProviders,
} from '../push/push-helpers.js';
import { createCampaign, createUser, json, runFanout, triggerOk, triggerStatus } from './campaign-helpers.js';

type Headers = Record<string, string>;
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

interface GoalConversions {
  goal_index: number;
  event: string | null;
  converted: number;
  revenue: number;
}

// Rule `conversion-goals`, through the real app: goals saved with a campaign, events attributed to
// the user's last-touch send of it, counted in the trigger status and analytics, and notified.
describe.each(TEST_DIALECTS)('conversion goals on %s', (dialect) => {
  const fakes = useFakeProviders();
  const ctx = useTestContext(dialect, {
    env: { HERALD_SECRET_KEY: TEST_SECRET_KEY, OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' },
    overrides: pushOverrides(fakes),
  });

  /** A project with ada and bo (one FCM device each) and providers configured. */
  async function world(tag: string, webhookEvents: string[] = []) {
    const p = await ctx().newProject(tag);
    await configureProviders(ctx(), p.secret, fakes());
    if (webhookEvents.length > 0)
      await createWebhook(ctx(), p.secret, { url: 'http://127.0.0.1:9/hook', events: webhookEvents });
    await createUser(ctx(), 'ada', {}, p.secret);
    await createUser(ctx(), 'bo', {}, p.secret);
    await registerDevice(ctx(), p.secret, 'ada', { fcm_token: fcmToken() });
    await registerDevice(ctx(), p.secret, 'bo', { fcm_token: fcmToken() });
    return p;
  }

  /** Sends the campaign to its default broadcast audience; answers the trigger and each user's message id. */
  async function send(secret: Headers, campaignId: string) {
    const triggerId = await triggerOk(ctx(), campaignId, { audience: { broadcast: true } }, secret);
    await runFanout(ctx());
    const ledger = await json(
      ctx(),
      'GET',
      `/api/v1/campaigns/${campaignId}/triggers/${triggerId}/deliveries`,
      undefined,
      secret,
    );
    const rows = ledger.json<{ deliveries: Array<{ project_user_id: string; message_id: string }> }>().deliveries;
    const messageOf = (user: string) => rows.find((r) => r.project_user_id === user)!.message_id;
    return { triggerId, ada: messageOf('ada'), bo: messageOf('bo') };
  }

  /** Makes the trigger's sends `ms` older, as if sent that long ago. */
  const age = (triggerId: string, ms: number) =>
    sql`update trigger_deliveries set created_at = created_at - ${ms} where trigger_id = ${triggerId}`.execute(
      ctx().database.db,
    );

  const track = async (secret: Headers, events: unknown[]) => {
    const res = await json(ctx(), 'POST', '/api/v1/events', { events }, secret);
    expect(res.statusCode, res.body).toBe(200);
  };

  const conversionsOf = (campaignId: string) =>
    ctx()
      .database.db.selectFrom('conversions')
      .selectAll()
      .where('campaign_id', '=', campaignId)
      .orderBy('converted_at')
      .execute();

  const counters = async (secret: Headers, campaignId: string, triggerId: string) =>
    (await triggerStatus(ctx(), campaignId, triggerId, secret)).counters as { conversions?: GoalConversions[] };

  const analytics = async (secret: Headers, campaignId: string, query = '') =>
    (await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/analytics${query}`, undefined, secret)).json<{
      totals: { conversions: GoalConversions[] };
    }>().totals.conversions;

  it('saves goals on create and PATCH, answers them, and refuses bad ones with a 400 naming the field', async () => {
    const p = await ctx().newProject('goals-400');
    const goals = [
      { event: 'purchase', deadline: '3d', revenue_property: 'amount' },
      {
        event: 'app_opened',
        where: { property: 'screen', op: 'eq', value: 'cart' },
        deadline: 3600,
        counted_from: 'open',
      },
    ];
    const campaignId = await createCampaign(ctx(), { conversion_goals: goals }, p.secret);
    const read = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}`, undefined, p.secret);
    expect(read.json().conversion_goals).toEqual([{ ...goals[0], counted_from: 'send' }, goals[1]]);
    const patched = await json(
      ctx(),
      'PATCH',
      `/api/v1/campaigns/${campaignId}`,
      { conversion_goals: [goals[1]] },
      p.secret,
    );
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().conversion_goals).toEqual([goals[1]]);
    const cleared = await json(ctx(), 'PATCH', `/api/v1/campaigns/${campaignId}`, { conversion_goals: null }, p.secret);
    expect(cleared.json().conversion_goals).toEqual([]);
    const plain = await createCampaign(ctx(), {}, p.secret);
    expect(
      (await json(ctx(), 'GET', `/api/v1/campaigns/${plain}`, undefined, p.secret)).json().conversion_goals,
    ).toEqual([]);

    const goal = { event: 'purchase', deadline: '1d' };
    const bad: Array<[unknown, RegExp]> = [
      [[goal, goal, goal, goal, goal], /^conversion_goals: at most 4 goals per campaign, got 5$/],
      [[{ ...goal, deadline: '59m' }], /^conversion_goals\[0\]\.deadline: expected "<n>h" or "<n>d"/],
      [[{ ...goal, deadline: 3599 }], /^conversion_goals\[0\]\.deadline: must be between 1 hour and 30 days/],
      [[{ ...goal, deadline: '31d' }], /^conversion_goals\[0\]\.deadline: must be between 1 hour and 30 days/],
      [[{ ...goal, deadline: 1.5 }], /^conversion_goals\[0\]\.deadline: expected/],
      [[{ event: 'purchase' }], /^conversion_goals\[0\]\.deadline: required/],
      [[goal, { ...goal, counted_from: 'click' }], /^conversion_goals\[1\]\.counted_from: expected "send" or "open"$/],
      [[{ ...goal, event: '' }], /^conversion_goals\[0\]\.event: expected an event name/],
      [[{ ...goal, revenue_property: 7 }], /^conversion_goals\[0\]\.revenue_property: expected a property name/],
      [[{ ...goal, extra: 1 }], /^conversion_goals\[0\]: unexpected field "extra"$/],
      [[{ ...goal, where: { event: 'x', op: 'exists' } }], /conversion_goals\[0\]\.where/],
      [[{ ...goal, where: { property: 'a', op: 'bogus', value: 1 } }], /conversion_goals\[0\]\.where/],
      [['purchase'], /^conversion_goals\[0\]: expected an object/],
      [{ event: 'purchase' }, /conversion_goals/],
    ];
    for (const [conversion_goals, message] of bad) {
      const label = JSON.stringify(conversion_goals);
      const created = await json(
        ctx(),
        'POST',
        '/api/v1/campaigns',
        {
          name: 'Bad',
          api_triggered: true,
          message: { title: 'Hi' },
          conversion_goals,
        },
        p.secret,
      );
      expect(created.statusCode, label).toBe(400);
      expect(created.json().error, label).toMatch(message);
      const patch = await json(ctx(), 'PATCH', `/api/v1/campaigns/${campaignId}`, { conversion_goals }, p.secret);
      expect(patch.statusCode, label).toBe(400);
    }
    // Nothing changed by the refused PATCHes.
    expect(
      (await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}`, undefined, p.secret)).json().conversion_goals,
    ).toEqual([]);
  });

  it('converts within the deadline from the send, not after it nor before the send, once per goal per send, with revenue', async () => {
    const p = await world('goals-window', ['conversion']);
    const campaignId = await createCampaign(
      ctx(),
      {
        conversion_goals: [
          { event: 'purchase', deadline: '1h', revenue_property: 'amount' },
          { event: 'purchase', where: { property: 'amount', op: 'gte', value: 100 }, deadline: '2d' },
        ],
      },
      p.secret,
    );
    const s = await send(p.secret, campaignId);
    const now = Date.now();
    await track(p.secret, [
      // Before the send: no conversion.
      { project_user_id: 'ada', name: 'purchase', properties: { amount: 500 }, timestamp: iso(now - HOUR) },
      // Within the hour: goal 0 with its revenue; below 100, not goal 1.
      { project_user_id: 'ada', name: 'purchase', properties: { amount: 42.5 }, timestamp: iso(now + 60_000) },
      // Again: goal 0 converted already for this send; 120 meets goal 1 (within 2 days).
      { project_user_id: 'ada', name: 'purchase', properties: { amount: 120 }, timestamp: iso(now + 2 * 60_000) },
      // bo: after goal 0's hour, within goal 1's days; a numeric string is no revenue.
      { project_user_id: 'bo', name: 'purchase', properties: { amount: 150 }, timestamp: iso(now + 2 * HOUR) },
      // Another event name converts nothing.
      { project_user_id: 'bo', name: 'purchased', properties: { amount: 150 }, timestamp: iso(now + 60_000) },
    ]);
    await track(p.secret, [
      { project_user_id: 'ada', name: 'purchase', properties: { amount: 999 }, timestamp: iso(now + 3 * 60_000) },
    ]);
    const rows = await conversionsOf(campaignId);
    expect(
      rows.map((r) => [
        r.goal_index,
        r.message_id,
        Number(r.converted_at),
        r.revenue === null ? null : Number(r.revenue),
      ]),
    ).toEqual([
      [0, s.ada, now + 60_000, 42.5],
      [1, s.ada, now + 2 * 60_000, null],
      [1, s.bo, now + 2 * HOUR, null],
    ]);
    expect(rows.every((r) => r.trigger_id === s.triggerId && r.variant === null)).toBe(true);

    const expected = [
      { goal_index: 0, event: 'purchase', converted: 1, revenue: 42.5 },
      { goal_index: 1, event: 'purchase', converted: 2, revenue: 0 },
    ];
    expect((await counters(p.secret, campaignId, s.triggerId)).conversions).toEqual(expected);
    expect(await analytics(p.secret, campaignId)).toEqual(expected);
    const triggerAnalytics = await json(
      ctx(),
      'GET',
      `/api/v1/campaigns/${campaignId}/triggers/${s.triggerId}/analytics`,
      undefined,
      p.secret,
    );
    expect(triggerAnalytics.json().totals.conversions).toEqual(expected);
    // The analytics window reads conversions by their time.
    expect(await analytics(p.secret, campaignId, `?since=${iso(now + HOUR)}`)).toEqual([
      { goal_index: 0, event: 'purchase', converted: 0, revenue: 0 },
      { goal_index: 1, event: 'purchase', converted: 1, revenue: 0 },
    ]);

    // One `conversion` notice per stored conversion, in the events' transaction.
    const jobs = await ctx()
      .database.db.selectFrom('jobs')
      .select('payload')
      .where('kind', '=', 'webhooks.deliver')
      .execute();
    const notices = jobs
      .map(
        (r) =>
          (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload) as {
            projectId: string;
            events: Array<{ type: string; body: string }>;
          },
      )
      .filter((j) => j.projectId === p.project.project_id)
      .flatMap((j) => j.events)
      .filter((e) => e.type === 'conversion')
      .map((e) => JSON.parse(e.body) as { type: string; timestamp: string; data: Record<string, unknown> });
    expect(notices).toHaveLength(3);
    expect(notices[0]).toEqual({
      type: 'conversion',
      timestamp: iso(now + 60_000),
      data: {
        project_id: p.project.project_id,
        campaign_id: campaignId,
        trigger_id: s.triggerId,
        goal_index: 0,
        goal_event: 'purchase',
        project_user_id: 'ada',
        message_id: s.ada,
        event_id: rows[0]!.event_id,
        converted_at: iso(now + 60_000),
        revenue: 42.5,
        variant: null,
      },
    });
  });

  it('counts from the open: an unopened send converts nothing, an old send opened now converts', async () => {
    const p = await world('goals-open');
    const campaignId = await createCampaign(
      ctx(),
      {
        conversion_goals: [
          { event: 'checkout', deadline: '1h' },
          { event: 'checkout', deadline: '1h', counted_from: 'open' },
        ],
      },
      p.secret,
    );
    const s = await send(p.secret, campaignId);
    await age(s.triggerId, 2 * HOUR); // sent two hours ago: past the hour from the send
    const opened = await json(ctx(), 'POST', `/api/v1/messages/${s.ada}:open`, {}, p.public);
    expect(opened.statusCode, opened.body).toBe(200);
    const now = Date.now();
    await track(p.secret, [
      { project_user_id: 'ada', name: 'checkout', timestamp: iso(now + 60_000) },
      { project_user_id: 'bo', name: 'checkout', timestamp: iso(now + 60_000) },
    ]);
    const rows = await conversionsOf(campaignId);
    expect(rows.map((r) => [r.goal_index, r.message_id])).toEqual([[1, s.ada]]);
    // An hour and more after the open: nothing more.
    await track(p.secret, [{ project_user_id: 'ada', name: 'checkout', timestamp: iso(now + 2 * HOUR) }]);
    expect(await conversionsOf(campaignId)).toHaveLength(1);
    expect((await counters(p.secret, campaignId, s.triggerId)).conversions).toEqual([
      { goal_index: 0, event: 'checkout', converted: 0, revenue: 0 },
      { goal_index: 1, event: 'checkout', converted: 1, revenue: 0 },
    ]);
  });

  it("credits the last touch among the campaign's sends, and only the campaign's own sends; direct sends never", async () => {
    const p = await world('goals-last-touch');
    const campaignId = await createCampaign(
      ctx(),
      { conversion_goals: [{ event: 'signup', deadline: '7d' }] },
      p.secret,
    );
    const other = await createCampaign(ctx(), {}, p.secret);
    const first = await send(p.secret, campaignId);
    await age(first.triggerId, 3 * HOUR);
    const second = await send(p.secret, campaignId);
    await age(second.triggerId, HOUR);
    await send(p.secret, other); // the latest send, of a campaign without goals
    // bo's campaign sends are older than the week; a direct send to bo, the latest, is not attributed.
    await sql`update trigger_deliveries set created_at = created_at - ${30 * 24 * HOUR}
      where message_id in (${first.bo}, ${second.bo})`.execute(ctx().database.db);
    await sendToDevices(ctx(), p.secret, [{ target: { project_user_id: 'bo' }, title: 'direct' }]);
    await track(p.secret, [
      { project_user_id: 'ada', name: 'signup' },
      { project_user_id: 'bo', name: 'signup' },
    ]);
    const rows = await conversionsOf(campaignId);
    expect(rows.map((r) => [r.trigger_id, r.message_id])).toEqual([[second.triggerId, second.ada]]);
    expect((await counters(p.secret, campaignId, first.triggerId)).conversions).toEqual([
      { goal_index: 0, event: 'signup', converted: 0, revenue: 0 },
    ]);
    expect((await counters(p.secret, campaignId, second.triggerId)).conversions?.[0]?.converted).toBe(1);
    expect(
      await ctx()
        .database.db.selectFrom('conversions')
        .selectAll()
        .where('project_id', '=', p.project.project_id)
        .execute(),
    ).toHaveLength(1);
  });

  it('attributes event-triggered sends too, and stops counting an archived campaign', async () => {
    const p = await world('goals-event-triggered');
    const campaignId = await createCampaign(
      ctx(),
      {
        api_triggered: false,
        event_trigger: { event: 'cart_abandoned', delay: 0 },
        conversion_goals: [{ event: 'purchase', deadline: '1d', revenue_property: 'amount' }],
      },
      p.secret,
    );
    await track(p.secret, [{ project_user_id: 'ada', name: 'cart_abandoned' }]);
    await runJobsUntilIdle(ctx().database.db, ctx().herald.jobHandlers, { clock: { now: () => Date.now() + 5000 } });
    const ledger = await sql<{ trigger_id: string; message_id: string }>`select d.trigger_id, d.message_id
      from trigger_deliveries d join campaign_triggers t on t.id = d.trigger_id
      where t.campaign_id = ${campaignId} and t.project_id = ${p.project.project_id}`.execute(ctx().database.db);
    expect(ledger.rows).toHaveLength(1);
    await track(p.secret, [{ project_user_id: 'ada', name: 'purchase', properties: { amount: 10 } }]);
    const rows = await conversionsOf(campaignId);
    expect(rows.map((r) => [r.trigger_id, r.message_id, Number(r.revenue)])).toEqual([
      [ledger.rows[0]!.trigger_id, ledger.rows[0]!.message_id, 10],
    ]);
    // Archived: its goals are no longer measured.
    await json(ctx(), 'PATCH', `/api/v1/campaigns/${campaignId}`, { status: 'archived' }, p.secret);
    await ctx().database.db.deleteFrom('conversions').where('campaign_id', '=', campaignId).execute();
    await track(p.secret, [{ project_user_id: 'ada', name: 'purchase', properties: { amount: 10 } }]);
    expect(await conversionsOf(campaignId)).toEqual([]);
  });

  it('deletes a campaign with its conversions', async () => {
    const p = await world('goals-delete');
    const campaignId = await createCampaign(
      ctx(),
      { conversion_goals: [{ event: 'purchase', deadline: '1d' }] },
      p.secret,
    );
    await send(p.secret, campaignId);
    await track(p.secret, [{ project_user_id: 'ada', name: 'purchase' }]);
    expect(await conversionsOf(campaignId)).toHaveLength(1);
    const deleted = await json(ctx(), 'DELETE', `/api/v1/campaigns/${campaignId}`, undefined, p.secret);
    expect(deleted.statusCode, deleted.body).toBeLessThan(300);
    expect(await conversionsOf(campaignId)).toEqual([]);
  });
});
