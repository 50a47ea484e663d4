import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createCampaignJobHandlers } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { lift, wilson } from '../../src/campaigns/results/interval.js';
import { foldOutcomeCounts } from '../../src/campaigns/results/outcome-rollups.repository.js';
import type { CampaignResults } from '../../src/campaigns/results/results.service.js';
import { rpc, v03Message, v1Message } from '../a2a/a2a-helpers.js';
import { insertFcmAudience } from '../helpers/bulk-audience.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { configureProviders, pushOverrides, useFakeProviders } from '../push/push-helpers.js';
import { json, triggerOk } from './campaign-helpers.js';

type Headers = Record<string, string>;
const MINUTE = 60_000;
const HOUR = 3_600_000;
const VARIANTS = [
  { variant_id: 'a', weight: 1, message: { title: 'A', body: 'first' } },
  { variant_id: 'b', weight: 1, message: { title: 'B', body: 'second' } },
];

// Hand-computed (Wilson 1927; Newcombe 1998, Statistics in Medicine 17, example (a) of method 10).
describe('rule `campaign-results`: intervals', () => {
  it('Wilson score interval matches hand-computed values, and is null without trials', () => {
    const ten = wilson(10, 100)!;
    expect(ten.rate).toBe(0.1);
    expect(ten.low).toBeCloseTo(0.05523, 5);
    expect(ten.high).toBeCloseTo(0.17437, 5);
    const none = wilson(0, 10)!;
    expect(none.low).toBe(0);
    expect(none.high).toBeCloseTo(0.27753, 5);
    const all = wilson(10, 10)!;
    expect(all.low).toBeCloseTo(0.72247, 5);
    expect(all.high).toBe(1);
    expect(wilson(0, 0)).toBeNull();
  });

  it('the difference interval is Newcombe’s hybrid score interval; relative lift over the baseline', () => {
    const d = lift(wilson(56, 70)!, wilson(48, 80)!, 'control');
    expect(d.difference).toBeCloseTo(0.2, 10);
    expect(d.low).toBeCloseTo(0.0524, 4);
    expect(d.high).toBeCloseTo(0.3339, 4);
    expect(d.relative).toBeCloseTo(0.2 / 0.6, 10);
    expect(d.baseline).toBe('control');
    expect(lift(wilson(3, 10)!, wilson(0, 10)!, 'a').relative).toBeNull();
  });
});

// Rule `campaign-results` through the app: real sends through the fake FCM, opens through the open endpoint.
describe.each(TEST_DIALECTS)('campaign results (rule `campaign-results`) on %s', (dialect) => {
  const fakes = useFakeProviders();
  let offset = 0;
  const clock = { now: () => Date.now() + offset };
  const ctx = useTestContext(dialect, {
    overrides: async (database) => ({ ...pushOverrides(fakes)(database), clock }),
  });
  const run = () =>
    runJobsUntilIdle(
      ctx().database.db,
      createCampaignJobHandlers({ push: ctx().herald.push, templates: ctx().herald.templates, clock }),
      { clock },
    );

  /** A campaign with variants a, b and a 20% control sent to `n` users of one FCM device each. */
  async function sentExperiment(tag: string, n: number, goals?: unknown[]) {
    const { project, secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    await insertFcmAudience(ctx().database.db, project.project_id, n, {
      tokenPrefix: `${tag}-`,
      userPrefix: 'u',
      properties: '{}',
      at: clock.now() - 1000,
    });
    const res = await json(
      ctx(),
      'POST',
      '/api/v1/campaigns',
      {
        name: 'Results',
        status: 'active',
        api_triggered: true,
        message: { title: 'Base' },
        variants: VARIANTS,
        control_percent: 20,
        ...(goals && { conversion_goals: goals }),
      },
      secret,
    );
    expect(res.statusCode, res.body).toBe(201);
    const campaignId = res.json<{ campaign_id: string }>().campaign_id;
    const sentAt = clock.now();
    const triggerId = await triggerOk(ctx(), campaignId, {}, secret);
    await run();
    const ledger = (
      await sql<{ message_id: string | null; variant: string; status: string }>`
        select message_id, variant, status from trigger_deliveries where trigger_id = ${triggerId}
        order by device_id`.execute(ctx().database.db)
    ).rows;
    const of = (v: string) => ledger.filter((r) => r.variant === v);
    return { secret, campaignId, triggerId, sentAt, ledger, of, projectKey: project.secret_key };
  }

  const open = async (secret: Headers, messageId: string, openedAt: number) => {
    const res = await ctx().inject({
      method: 'POST',
      url: `/api/v1/messages/${messageId}:open`,
      headers: { ...secret, 'content-type': 'application/json' },
      payload: { opened_at: new Date(openedAt).toISOString() },
    });
    expect(res.statusCode, res.body).toBe(200);
  };
  const results = async (secret: Headers, campaignId: string, query = '') => {
    const res = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/results${query}`, undefined, secret);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<CampaignResults>();
  };

  it('counts per variant and control, open rates with Wilson intervals, lift over the first variant, per trigger', async () => {
    const w = await sentExperiment('results', 80);
    const a = w.of('a');
    const b = w.of('b');
    const control = w.of('control');
    expect(a.length).toBeGreaterThan(4);
    expect(b.length).toBeGreaterThan(4);
    expect(control.length).toBeGreaterThan(0);
    expect(control.every((r) => r.status === 'DELIVERY_RESULT_STATUS_SKIPPED')).toBe(true);
    // Two of a's recipients open, all but one of b's: b's rate is higher.
    offset += 2 * HOUR;
    const openedA = a.slice(0, 2);
    const openedB = b.slice(0, b.length - 1);
    for (const r of [...openedA, ...openedB]) await open(w.secret, r.message_id!, w.sentAt + 5 * MINUTE);

    const body = await results(w.secret, w.campaignId);
    expect(body).toMatchObject({
      campaign_id: w.campaignId,
      trigger_id: null,
      granularity: 'day',
      confidence_level: 0.95,
    });
    expect(body.variants.map((v) => v.variant)).toEqual(['a', 'b', 'control']);
    const [armA, armB, armControl] = body.variants;
    expect(armA).toMatchObject({ sent: a.length, delivered: a.length, skipped: 0, opened: 2, control: false });
    expect(armB).toMatchObject({ sent: b.length, delivered: b.length, opened: b.length - 1 });
    expect(armControl).toMatchObject({
      control: true,
      sent: 0,
      delivered: 0,
      skipped: control.length,
      opened: 0,
      open_rate: null,
      open_rate_lift: null,
    });
    // The intervals, computed here by the formula: (p + z²/2n ± z√(p(1−p)/n + z²/4n²)) / (1 + z²/n).
    const z = 1.959963984540054;
    const byHand = (x: number, n: number) => {
      const p = x / n;
      const c = (p + (z * z) / (2 * n)) / (1 + (z * z) / n);
      const h = (z / (1 + (z * z) / n)) * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n));
      return { rate: p, low: Math.max(0, c - h), high: Math.min(1, c + h) };
    };
    for (const [arm, x, n] of [
      [armA!, 2, a.length],
      [armB!, b.length - 1, b.length],
    ] as const) {
      const want = byHand(x, n);
      expect(arm.open_rate!.rate).toBeCloseTo(want.rate, 12);
      expect(arm.open_rate!.low).toBeCloseTo(want.low, 12);
      expect(arm.open_rate!.high).toBeCloseTo(want.high, 12);
    }
    // No control rate for opens (the control receives nothing): b is measured against a, the first variant.
    expect(armA!.open_rate_lift).toBeNull();
    const l = armB!.open_rate_lift!;
    expect(l.baseline).toBe('a');
    expect(l.difference).toBeCloseTo((b.length - 1) / b.length - 2 / a.length, 12);
    expect(l.difference).toBeGreaterThan(0);
    expect(l.low).toBeLessThan(l.difference);
    expect(l.high).toBeGreaterThan(l.difference);
    expect(l.relative).toBeCloseTo(l.difference / (2 / a.length), 12);
    expect(body.totals).toMatchObject({ sent: a.length + b.length, opened: openedA.length + openedB.length });
    expect(body.triggers).toEqual([{ trigger_id: w.triggerId, variants: body.variants }]);

    // One trigger answers the same; a second trigger adds up in the campaign.
    expect((await results(w.secret, w.campaignId, `?trigger_id=${w.triggerId}`)).variants).toEqual(body.variants);
    const second = await triggerOk(ctx(), w.campaignId, {}, w.secret);
    await run();
    const both = await results(w.secret, w.campaignId);
    expect(both.variants[0]).toMatchObject({ sent: 2 * a.length, opened: 2 });
    expect(both.triggers.map((t) => t.trigger_id).sort()).toEqual([w.triggerId, second].sort());
    const one = await results(w.secret, w.campaignId, `?trigger_id=${w.triggerId}`);
    expect(one.trigger_id).toBe(w.triggerId);
    expect(one.variants).toEqual(body.variants);
  });

  it('series by minute, hour and day; from/to bound sends and opens', async () => {
    const w = await sentExperiment('results-series', 40);
    const a = w.of('a');
    offset += 3 * HOUR;
    const early = w.sentAt + 10 * MINUTE;
    const late = w.sentAt + 2 * HOUR;
    await open(w.secret, a[0]!.message_id!, early);
    await open(w.secret, a[1]!.message_id!, late);
    const floor = (ms: number, size: number) => new Date(Math.floor(ms / size) * size).toISOString();
    const hourly = await results(w.secret, w.campaignId, '?granularity=hour');
    expect(hourly.granularity).toBe('hour');
    const expected = new Map<string, { sent: number; opened: number }>();
    const bump = (start: string, sent: number, opened: number) => {
      const e = expected.get(start) ?? { sent: 0, opened: 0 };
      expected.set(start, { sent: e.sent + sent, opened: e.opened + opened });
    };
    bump(floor(w.sentAt, HOUR), a.length, 0);
    bump(floor(early, HOUR), 0, 1);
    bump(floor(late, HOUR), 0, 1);
    expect(hourly.series.map((s) => s.start)).toEqual([...expected.keys()].sort());
    for (const s of hourly.series) {
      const arm = s.variants.find((v) => v.variant === 'a') ?? { sent: 0, opened: 0 };
      expect({ sent: arm.sent, opened: arm.opened }, s.start).toEqual(expected.get(s.start));
    }
    const minutes = await results(w.secret, w.campaignId, '?granularity=minute');
    expect(minutes.series.map((s) => s.start)).toContain(floor(early, MINUTE));
    expect(minutes.series.map((s) => s.start)).toContain(floor(late, MINUTE));
    const days = await results(w.secret, w.campaignId, '?granularity=day');
    expect(days.series.every((s) => s.start.endsWith('T00:00:00.000Z'))).toBe(true);
    expect(days.series.reduce((n, s) => n + s.variants.reduce((m, v) => m + v.opened, 0), 0)).toBe(2);

    // A window after the send: no sends, the late open only (its rate has no deliveries to stand on).
    const from = new Date(w.sentAt + HOUR).toISOString();
    const windowed = await results(w.secret, w.campaignId, `?from=${from}`);
    expect(windowed.from).toBe(from);
    expect(windowed.variants).toEqual([
      expect.objectContaining({ variant: 'a', sent: 0, delivered: 0, opened: 1, open_rate: null }),
    ]);
    const to = new Date(w.sentAt + HOUR).toISOString();
    const before = await results(w.secret, w.campaignId, `?to=${to}`);
    expect(before.variants.find((v) => v.variant === 'a')).toMatchObject({ sent: a.length, opened: 1 });
  });

  it('counts conversions per goal with their revenue, rate and interval beside the opens', async () => {
    // 60 users: with 20 the 20% control came out empty about once a hundred runs (0.8^20), the variant
    // being a hash of random project and campaign ids; with 60 it is 0.8^60, about 2 in a million.
    const w = await sentExperiment('results-conversions', 60, [
      { event: 'purchase', deadline: '1d', revenue_property: 'amount' },
      { event: 'signup', deadline: '1d' },
    ]);
    const at = new Date(w.sentAt + MINUTE).toISOString();
    offset += 2 * MINUTE;
    // Two users a send reached (a control user has no send to convert from).
    const [first, second] = (
      await sql<{ project_user_id: string }>`
        select u.project_user_id from trigger_deliveries d join users u on u.id = d.user_id
        where d.trigger_id = ${w.triggerId} and d.status = 'DELIVERY_RESULT_STATUS_ACCEPTED'
        order by u.project_user_id limit 2`.execute(ctx().database.db)
    ).rows.map((r) => r.project_user_id);
    // And one user of the control group, who converts on their record (rule `conversion-goals`).
    const [held] = (
      await sql<{ project_user_id: string }>`
        select u.project_user_id from trigger_deliveries d join users u on u.id = d.user_id
        where d.trigger_id = ${w.triggerId} and d.failure_reason = 'CONTROL'
        order by u.project_user_id limit 1`.execute(ctx().database.db)
    ).rows.map((r) => r.project_user_id);
    const res = await json(
      ctx(),
      'POST',
      '/api/v1/events',
      {
        events: [
          { project_user_id: first, name: 'purchase', properties: { amount: 30 }, timestamp: at },
          { project_user_id: second, name: 'purchase', properties: { amount: 12.5 }, timestamp: at },
          { project_user_id: held, name: 'purchase', properties: {}, timestamp: at },
        ],
      },
      w.secret,
    );
    expect(res.statusCode, res.body).toBe(200);
    const body = await results(w.secret, w.campaignId);
    expect(body.totals.conversions).toEqual([
      { goal_index: 0, event: 'purchase', converted: 3, revenue: 42.5 },
      { goal_index: 1, event: 'signup', converted: 0, revenue: 0 },
    ]);
    // Each arm lists every goal; the conversions land in the arm their row records.
    for (const arm of body.variants) expect(arm.conversions.map((g) => g.event)).toEqual(['purchase', 'signup']);
    const converted = body.variants.reduce((n, a) => n + a.conversions[0]!.converted, 0);
    expect(converted).toBe(3);
    const withRate = body.variants.find((a) => a.delivered > 0)!;
    const goal = withRate.conversions[0]!;
    expect(goal.rate).toEqual(wilson(Math.min(goal.converted, withRate.delivered), withRate.delivered));
    // The control's rate is over its recorded devices, and it is the baseline of the variants' lift.
    const control = body.variants.find((a) => a.variant === 'control')!;
    expect(control.conversions[0]).toMatchObject({ converted: 1, rate: wilson(1, control.skipped) });
    expect(goal.lift).toMatchObject({ baseline: 'control' });
  });

  it('refuses a bad granularity or window with 400, an unknown trigger or campaign with 404', async () => {
    const w = await sentExperiment('results-bad', 10);
    const base = `/api/v1/campaigns/${w.campaignId}/results`;
    for (const query of [
      'granularity=week',
      'granularity=',
      'from=yesterday',
      'to=2026-02-30T00:00:00Z',
      'from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z',
    ]) {
      const res = await json(ctx(), 'GET', `${base}?${query}`, undefined, w.secret);
      expect(res.statusCode, query).toBe(400);
      expect(res.json<{ error: string }>().error, query).toMatch(/granularity|from|to/);
    }
    const unknownTrigger = await json(ctx(), 'GET', `${base}?trigger_id=nope`, undefined, w.secret);
    expect(unknownTrigger.statusCode).toBe(404);
    expect(unknownTrigger.json<{ error: string }>().error).toMatch(/Trigger nope does not exist/);
    const unknown = await json(ctx(), 'GET', '/api/v1/campaigns/nope/results', undefined, w.secret);
    expect(unknown.statusCode).toBe(404);
    const other = await ctx().newProject('results-other');
    expect((await json(ctx(), 'GET', base, undefined, other.secret)).statusCode).toBe(404);
  });

  it('the A2A skill `get-campaign-stats` answers what REST does, on both protocol versions', async () => {
    const w = await sentExperiment('results-a2a', 30);
    offset += HOUR;
    await open(w.secret, w.of('b')[0]!.message_id!, w.sentAt + MINUTE);
    const rest = await results(w.secret, w.campaignId, '?granularity=hour');
    const res = await rpc(
      ctx(),
      'SendMessage',
      { message: v1Message({ skill: 'get-campaign-stats', campaignId: w.campaignId, granularity: 'hour' }) },
      { version: '1.0', key: w.projectKey },
    );
    const task = res.json().result.task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts[0].name).toBe('campaign-results');
    expect(task.artifacts[0].parts[0].data).toEqual(rest);
    const legacy = await rpc(
      ctx(),
      'message/send',
      { message: v03Message({ skill: 'get-campaign-stats', campaignId: w.campaignId, granularity: 'hour' }) },
      { key: w.projectKey },
    );
    expect(legacy.json().result.artifacts[0].parts[0]).toMatchObject({ kind: 'data', data: rest });
    // Unknown trigger: the task fails; a bad granularity: -32602 and no task.
    const failed = await rpc(
      ctx(),
      'SendMessage',
      { message: v1Message({ skill: 'get-campaign-stats', campaignId: w.campaignId, triggerId: 'nope' }) },
      { version: '1.0', key: w.projectKey },
    );
    expect(failed.json().result.task.status.state).toBe('TASK_STATE_FAILED');
    const bad = await rpc(
      ctx(),
      'SendMessage',
      { message: v1Message({ skill: 'get-campaign-stats', campaignId: w.campaignId, granularity: 'week' }) },
      { version: '1.0', key: w.projectKey },
    );
    expect(bad.json().error.code).toBe(-32602);
  });
});

// Migration 0051: opens and conversions are read from per-minute rollups the database keeps; they
// must count exactly what the rows hold, however the question is cut.
describe.each(TEST_DIALECTS)('campaign results from the open and conversion rollups on %s', (dialect) => {
  const fakes = useFakeProviders();
  let offset = 0;
  const clock = { now: () => Date.now() + offset };
  const ctx = useTestContext(dialect, {
    overrides: async (database) => ({ ...pushOverrides(fakes)(database), clock }),
  });
  const run = () =>
    runJobsUntilIdle(
      ctx().database.db,
      createCampaignJobHandlers({ push: ctx().herald.push, templates: ctx().herald.templates, clock }),
      { clock },
    );

  it('opens (a repeated one once) and conversions with revenue equal the rows, per variant, trigger and window', async () => {
    const db = ctx().database.db;
    const { project, secret } = await ctx().newProject('rollups');
    await configureProviders(ctx(), secret, fakes());
    await insertFcmAudience(db, project.project_id, 40, {
      tokenPrefix: 'rollups-',
      userPrefix: 'u',
      properties: '{}',
      at: clock.now() - 1000,
    });
    const created = await json(
      ctx(),
      'POST',
      '/api/v1/campaigns',
      {
        name: 'Rollups',
        status: 'active',
        api_triggered: true,
        message: { title: 'Base' },
        variants: VARIANTS,
        control_percent: 20,
        conversion_goals: [
          { event: 'purchase', deadline: '1d', revenue_property: 'amount' },
          { event: 'signup', deadline: '1d' },
        ],
      },
      secret,
    );
    expect(created.statusCode, created.body).toBe(201);
    const campaignId = created.json<{ campaign_id: string }>().campaign_id;
    const sentAt = clock.now();
    const first = await triggerOk(ctx(), campaignId, {}, secret);
    const second = await triggerOk(ctx(), campaignId, {}, secret);
    await run();
    offset += 3 * HOUR;
    const accepted = (
      await sql<{ trigger_id: string; message_id: string; project_user_id: string }>`
        select d.trigger_id, d.message_id, u.project_user_id from trigger_deliveries d join users u on u.id = d.user_id
        where d.trigger_id in (${first}, ${second}) and d.status = 'DELIVERY_RESULT_STATUS_ACCEPTED'
        order by d.trigger_id, d.device_id`.execute(db)
    ).rows;
    expect(accepted.length).toBeGreaterThan(40);
    const open = async (messageId: string, openedAt: number) => {
      const res = await ctx().inject({
        method: 'POST',
        url: `/api/v1/messages/${messageId}:open`,
        headers: { ...secret, 'content-type': 'application/json' },
        payload: { opened_at: new Date(openedAt).toISOString() },
      });
      expect(res.statusCode, res.body).toBe(200);
    };
    // Opens of both triggers, early and two hours on; the first one reported twice (counted once).
    for (const [i, r] of accepted.entries())
      if (i % 3 !== 2) await open(r.message_id, sentAt + (i % 2 === 0 ? 5 * MINUTE : 2 * HOUR));
    await open(accepted[0]!.message_id, sentAt + 7 * MINUTE);
    // Conversions: purchases with revenue early and late, signups; the same purchase again counts once.
    const purchase = (user: string, amount: number, at: number) => ({
      project_user_id: user,
      name: 'purchase',
      properties: { amount },
      timestamp: new Date(at).toISOString(),
    });
    const buyers = [...new Set(accepted.filter((_, i) => i % 4 === 1).map((r) => r.project_user_id))];
    const events = [
      ...buyers.map((u, i) => purchase(u, 2.5 * (i + 1), sentAt + (i % 2 === 0 ? MINUTE : 90 * MINUTE))),
      ...buyers
        .slice(0, 3)
        .map((u) => ({ project_user_id: u, name: 'signup', timestamp: new Date(sentAt + 2 * MINUTE).toISOString() })),
    ];
    for (const batch of [events, [purchase(buyers[0]!, 100, sentAt + 3 * MINUTE)]]) {
      const res = await json(ctx(), 'POST', '/api/v1/events', { events: batch }, secret);
      expect(res.statusCode, res.body).toBe(200);
    }
    // Rows as the app stored them: the repeated open and purchase left none of their own.
    const stored = async (query: ReturnType<typeof sql<{ n: number }>>) => Number((await query.execute(db)).rows[0]!.n);
    expect(await stored(sql`select count(*) as n from conversions where campaign_id = ${campaignId}`)).toBeGreaterThan(
      3,
    );
    expect(await stored(sql`select count(*) as n from conversions where revenue = 100`)).toBe(0);
    expect(
      await stored(sql`select count(*) as n from message_opens where message_id = ${accepted[0]!.message_id}`),
    ).toBe(1);

    /** Opens and conversions per arm as the rows hold them, in the scope and [from, to). */
    const fromRows = async (triggerId: string | null, from: number, to: number) => {
      const inTriggers = triggerId ? [triggerId] : [first, second];
      const opens = (
        await sql<{ variant: string | null; n: number }>`select variant, count(*) as n from message_opens
          where trigger_id in (${sql.join(inTriggers)}) and opened_at >= ${from} and opened_at < ${to} group by variant`.execute(
          db,
        )
      ).rows;
      const conversions = (
        await sql<{ variant: string | null; goal_index: number; n: number; revenue: number | null }>`
          select variant, goal_index, count(*) as n, sum(revenue) as revenue from conversions
          where trigger_id in (${sql.join(inTriggers)}) and converted_at >= ${from} and converted_at < ${to}
          group by variant, goal_index`.execute(db)
      ).rows;
      const arms = new Map<string, { opened: number; goals: Array<[number, number]> }>();
      const arm = (v: string | null) => {
        const key = String(v);
        if (!arms.has(key))
          arms.set(key, {
            opened: 0,
            goals: [
              [0, 0],
              [0, 0],
            ],
          });
        return arms.get(key)!;
      };
      for (const o of opens) arm(o.variant).opened = Number(o.n);
      for (const c of conversions) arm(c.variant).goals[Number(c.goal_index)] = [Number(c.n), Number(c.revenue ?? 0)];
      return arms;
    };
    const fromResults = (variants: CampaignResults['variants']) =>
      new Map(
        variants
          .filter((v) => v.opened > 0 || v.conversions.some((g) => g.converted > 0))
          .map((v) => [
            String(v.variant),
            { opened: v.opened, goals: v.conversions.map((g): [number, number] => [g.converted, g.revenue]) },
          ]),
      );
    const expectSame = async (triggerId: string | null, from: number, to: number) => {
      const query = new URLSearchParams({ from: new Date(from).toISOString(), to: new Date(to).toISOString() });
      if (triggerId) query.set('trigger_id', triggerId);
      const res = await json(
        ctx(),
        'GET',
        `/api/v1/campaigns/${campaignId}/results?${query.toString()}`,
        undefined,
        secret,
      );
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json<CampaignResults>();
      const want = await fromRows(triggerId, from, to);
      expect(fromResults(body.variants), `${triggerId} ${from}-${to}`).toEqual(want);
      return { body, want };
    };
    const dayStart = Math.floor(sentAt / (24 * HOUR)) * 24 * HOUR;
    const all = await expectSame(null, dayStart - 24 * HOUR, dayStart + 2 * 24 * HOUR);
    expect([...all.want.keys()].sort()).toEqual(['a', 'b']);
    expect(all.body.totals.opened).toBe(accepted.filter((_, i) => i % 3 !== 2).length);
    expect(all.body.totals.conversions[0]!.revenue).toBeGreaterThan(0);
    expect(all.body.totals.conversions[1]!.converted).toBeGreaterThanOrEqual(3);
    for (const t of [first, second]) await expectSame(t, dayStart - 24 * HOUR, dayStart + 2 * 24 * HOUR);
    // Minute-aligned windows: only the late opens and purchases; only the early ones.
    const hourOn = Math.floor((sentAt + HOUR) / MINUTE) * MINUTE;
    const late = await expectSame(null, hourOn, dayStart + 2 * 24 * HOUR);
    expect(late.body.totals.opened).toBeGreaterThan(0);
    expect(late.body.totals.opened).toBeLessThan(all.body.totals.opened);
    await expectSame(first, dayStart - 24 * HOUR, hourOn);

    // PostgreSQL appended one partial row per open; folding leaves one row per group and the same answer.
    if (dialect === 'postgres') {
      const groups = async () =>
        (
          await sql<{ rows: number; groups: number }>`select count(*) as rows,
            (select count(*) from (select distinct trigger_id, minute, variant from trigger_open_counts) g) as groups
            from trigger_open_counts`.execute(db)
        ).rows[0]!;
      const before = await groups();
      expect(Number(before.rows)).toBeGreaterThan(Number(before.groups));
      await foldOutcomeCounts(db);
      const after = await groups();
      expect(Number(after.rows)).toBe(Number(after.groups));
      await expectSame(null, dayStart - 24 * HOUR, dayStart + 2 * 24 * HOUR);
      await expectSame(second, hourOn, dayStart + 2 * 24 * HOUR);
    }

    // A deleted campaign's triggers take their rollup rows with them.
    const rollupRows = async () =>
      Promise.all(
        ['trigger_open_counts', 'trigger_conversion_counts'].map(async (table) =>
          Number(
            (
              await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}
                where trigger_id in (${first}, ${second})`.execute(db)
            ).rows[0]!.n,
          ),
        ),
      );
    expect((await rollupRows()).every((n) => n > 0)).toBe(true);
    const deleted = await json(ctx(), 'DELETE', `/api/v1/campaigns/${campaignId}`, undefined, secret);
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(await rollupRows()).toEqual([0, 0]);
  });
});
