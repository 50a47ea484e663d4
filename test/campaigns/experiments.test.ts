import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createCampaignJobHandlers } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import {
  assignmentPoint,
  assignVariant,
  CONTROL,
  type Experiment,
} from '../../src/campaigns/experiments/experiment.js';
import { insertFcmAudience } from '../helpers/bulk-audience.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { configureProviders, pushOverrides, useFakeProviders } from '../push/push-helpers.js';
import { json, triggerOk, triggerStatus } from './campaign-helpers.js';

type Headers = Record<string, string>;
const MINUTE = 60_000;
const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

const VARIANTS = [
  { variant_id: 'a', weight: 1, message: { title: 'A for {{ user.project_user_id }}', body: 'first' } },
  { variant_id: 'b', weight: 1, message: { title: 'B', body: 'second' } },
];

// Rule `campaign-experiments` through the app: save-time checks, assignment, control, recording.
describe.each(TEST_DIALECTS)('campaign experiments (rule `campaign-experiments`) on %s', (dialect) => {
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

  /** A project with `n` users of one FCM device each (`u0`..); token → internal user id. */
  async function world(tag: string, n: number) {
    const { project, secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    const tokens = await insertFcmAudience(ctx().database.db, project.project_id, n, {
      tokenPrefix: `${tag}-`,
      userPrefix: 'u',
      properties: '{}',
      at: clock.now() - 1000,
    });
    const rows = await sql<{ push_address: string; user_id: string; project_user_id: string }>`
      select d.push_address, d.user_id, u.project_user_id from devices d join users u on u.id = d.user_id
      where d.project_id = ${project.project_id}`.execute(ctx().database.db);
    const users = new Map(rows.rows.map((r) => [r.push_address, { id: r.user_id, puid: r.project_user_id }]));
    return { projectId: project.project_id, secret: secret as Headers, tokens, users };
  }
  const create = (secret: Headers, fields: Record<string, unknown>) =>
    json(
      ctx(),
      'POST',
      '/api/v1/campaigns',
      { name: 'Experiment', status: 'active', api_triggered: true, message: { title: 'Base' }, ...fields },
      secret,
    );
  const received = (token: string) =>
    fakes()
      .fcm.recorder.items.filter((i) => i.status === 200 && i.token === token)
      .map((i) => i.body as { notification?: { title?: string }; data: Record<string, string> });
  const ledger = async (triggerId: string) =>
    (
      await sql<{ user_id: string; variant: string | null; status: string; failure_reason: string | null }>`
        select user_id, variant, status, failure_reason from trigger_deliveries where trigger_id = ${triggerId}`.execute(
        ctx().database.db,
      )
    ).rows;

  it('create and PATCH check variants and control_percent with clear 400s, and answer them', async () => {
    const { secret } = await ctx().newProject('validation');
    const nine = Array.from({ length: 9 }, (_, i) => ({ variant_id: `v${i}`, weight: 1, message: { title: 'x' } }));
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ variants: nine }, /more than 8 items|at most 8 variants/],
      [
        {
          variants: [
            { variant_id: 'a', weight: 1, message: { title: 'x' } },
            { variant_id: 'a', weight: 2, message: { title: 'y' } },
          ],
        },
        /duplicate variant id "a"/,
      ],
      [{ variants: [{ variant_id: 'a', weight: 0, message: { title: 'x' } }] }, /weight/],
      [{ variants: [{ variant_id: 'a', weight: 1.5, message: { title: 'x' } }] }, /weight/],
      [{ variants: [{ variant_id: 'control', weight: 1, message: { title: 'x' } }] }, /"control" is reserved/],
      [{ variants: [{ variant_id: 'a', weight: 1, message: {} }] }, /variants\.0\.message: give a title or a body/],
      [{ control_percent: 51 }, /control_percent/],
      [{ control_percent: -1 }, /control_percent/],
      [
        {
          variants: VARIANTS,
          winner: { test_percent: 20, after: 'PT4H', metric: 'opened', fallback: 'z' },
        },
        /winner\.fallback: expected "none" or one of the variant ids/,
      ],
      [
        { variants: VARIANTS, winner: { test_percent: 20, after: 'PT5M', metric: 'opened', fallback: 'none' } },
        /winner\.after: must be between 1 hour and 30 days/,
      ],
      [
        {
          api_triggered: false,
          event_trigger: { event: 'signup', delay: 0 },
          variants: VARIANTS,
          winner: { test_percent: 20, after: 'PT4H', metric: 'opened', fallback: 'none' },
        },
        /winner: an event-triggered campaign sends one user at a time/,
      ],
      [
        { variants: [VARIANTS[0]], winner: { test_percent: 20, after: 'PT4H', metric: 'opened', fallback: 'none' } },
        /winner: needs at least two variants/,
      ],
    ];
    for (const [fields, message] of bad) {
      const res = await create(secret, fields);
      expect(res.statusCode, JSON.stringify(fields)).toBe(400);
      expect(res.json<{ error: string }>().error).toMatch(message);
    }
    // Without experiment fields a campaign answers the empty experiment.
    const plain = await create(secret, { campaign_id: 'plain' });
    expect(plain.statusCode, plain.body).toBe(201);
    expect(plain.json()).toMatchObject({ variants: [], control_percent: 0, winner: null });

    const ok = await create(secret, { campaign_id: 'ab', variants: VARIANTS, control_percent: 10 });
    expect(ok.statusCode, ok.body).toBe(201);
    expect(ok.json()).toMatchObject({ variants: VARIANTS, control_percent: 10, winner: null });
    const patched = await json(ctx(), 'PATCH', '/api/v1/campaigns/ab', { control_percent: 60 }, secret);
    expect(patched.statusCode).toBe(400);
    const dup = await json(ctx(), 'PATCH', '/api/v1/campaigns/ab', { variants: [VARIANTS[0], VARIANTS[0]] }, secret);
    expect(dup.statusCode).toBe(400);
    expect(dup.json<{ error: string }>().error).toMatch(/duplicate variant id "a"/);
    const winner = { test_percent: 20, after: 'P1D', metric: 'opened', fallback: 'a' };
    const set = await json(ctx(), 'PATCH', '/api/v1/campaigns/ab', { control_percent: 25, winner }, secret);
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toMatchObject({ variants: VARIANTS, control_percent: 25, winner });
    const cleared = await json(
      ctx(),
      'PATCH',
      '/api/v1/campaigns/ab',
      { variants: [], control_percent: 0, winner: null },
      secret,
    );
    expect(cleared.statusCode, cleared.body).toBe(200);
    const read = await json(ctx(), 'GET', '/api/v1/campaigns/ab', undefined, secret);
    expect(read.json()).toMatchObject({ variants: [], control_percent: 0, winner: null });
  });

  it('each user keeps one variant across triggers, gets its message; the control gets nothing and is recorded', async () => {
    const w = await world('ab', 60);
    const res = await create(w.secret, { variants: VARIANTS, control_percent: 20 });
    expect(res.statusCode, res.body).toBe(201);
    const campaignId = res.json<{ campaign_id: string }>().campaign_id;
    const experiment = { variants: VARIANTS, control_percent: 20, winner: null } as Experiment;
    const expected = (userId: string) => assignVariant(experiment, assignmentPoint(w.projectId, campaignId, userId));

    const first = await triggerOk(ctx(), campaignId, {}, w.secret);
    await run();
    const second = await triggerOk(ctx(), campaignId, {}, w.secret);
    await run();

    const byUser = new Map<string, string[]>();
    for (const t of [first, second])
      for (const row of await ledger(t)) byUser.set(row.user_id, [...(byUser.get(row.user_id) ?? []), row.variant!]);
    expect(byUser.size).toBe(60);
    let control = 0;
    const seen = new Set<string>();
    for (const token of w.tokens) {
      const user = w.users.get(token)!;
      const variant = expected(user.id);
      seen.add(variant);
      // The same variant in both triggers, the one the hash gives.
      expect(byUser.get(user.id)).toEqual([variant, variant]);
      const got = received(token);
      if (variant === CONTROL) {
        control++;
        expect(got).toEqual([]);
      } else {
        expect(got).toHaveLength(2);
        for (const m of got) {
          expect(m.notification?.title).toBe(variant === 'a' ? `A for ${user.puid}` : 'B');
          expect(m.data.herald_variant).toBe(variant);
        }
      }
    }
    // 60 users over 20/40/40: every group is reached.
    expect([...seen].sort()).toEqual(['a', 'b', 'control']);
    for (const row of await ledger(first))
      if (row.variant === CONTROL)
        expect(row).toMatchObject({ status: 'DELIVERY_RESULT_STATUS_SKIPPED', failure_reason: 'CONTROL' });

    // Counted as their own outcome in the trigger status, not as a failure.
    const status = await triggerStatus(ctx(), campaignId, first, w.secret);
    expect(status.counters).toMatchObject({ accepted: 60 - control, failed: 0, skipped: { control } });
    // Analytics: sends per variant.
    const analytics = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/analytics`, undefined, w.secret);
    expect(analytics.statusCode, analytics.body).toBe(200);
    const count = (v: string) => w.tokens.filter((t) => expected(w.users.get(t)!.id) === v).length;
    expect(analytics.json().totals.by_variant).toEqual({
      a: { sent: 2 * count('a'), failed: 0, skipped: 0 },
      b: { sent: 2 * count('b'), failed: 0, skipped: 0 },
      control: { sent: 0, failed: 0, skipped: 2 * control },
    });
  });

  it('without variants nothing changes: no variant recorded, no herald_variant in the payload', async () => {
    const w = await world('plain', 5);
    const res = await create(w.secret, {});
    const campaignId = res.json<{ campaign_id: string }>().campaign_id;
    const triggerId = await triggerOk(ctx(), campaignId, {}, w.secret);
    await run();
    expect((await ledger(triggerId)).map((r) => r.variant)).toEqual([null, null, null, null, null]);
    for (const token of w.tokens) {
      const [m] = received(token);
      expect(m?.notification?.title).toBe('Base');
      expect(m?.data.herald_variant).toBeUndefined();
    }
    const analytics = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/analytics`, undefined, w.secret);
    expect(analytics.json().totals.by_variant).toEqual({});
  });

  it("a variant's message is localized like the campaign's (rule `message-locales`), its locale keys stored canonical", async () => {
    // 20 of 40 users in fr-CA: each side then holds both variants but for a chance of 2 in 2^20.
    const w = await world('variant-locales', 40);
    const frenchUsers = Array.from({ length: 20 }, (_, i) => `u${i}`);
    await sql`update users set properties = ${'{"locale":"fr-CA"}'} where project_id = ${w.projectId}
      and project_user_id in (${sql.join(frenchUsers)})`.execute(ctx().database.db);
    const res = await create(w.secret, {
      variants: [
        { variant_id: 'a', weight: 1, message: { title: 'A', body: 'en', locales: { FR: { title: 'A-fr' } } } },
        { variant_id: 'b', weight: 1, message: { title: 'B', body: 'en', locales: { fr: { title: 'B-fr' } } } },
      ],
    });
    expect(res.statusCode, res.body).toBe(201);
    const campaign = res.json<{ campaign_id: string; variants: { message: { locales: object } }[] }>();
    expect(Object.keys(campaign.variants[0]!.message.locales)).toEqual(['fr']);
    const bad = await create(w.secret, {
      variants: [{ variant_id: 'a', weight: 1, message: { title: 'A', locales: { 'not a tag': { title: 'x' } } } }],
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/^variants\.0\.message\.locales: "not a tag" is not a BCP 47 language tag/);
    await triggerOk(ctx(), campaign.campaign_id, {}, w.secret);
    await run();
    const titles = new Set<string>();
    for (const token of w.tokens) {
      const [m] = received(token);
      const variant = m!.data.herald_variant!;
      const french = frenchUsers.includes(w.users.get(token)!.puid);
      const title = `${variant.toUpperCase()}${french ? '-fr' : ''}`;
      expect(m?.notification?.title, token).toBe(title);
      titles.add(title);
    }
    expect([...titles].sort()).toEqual(['A', 'A-fr', 'B', 'B-fr']);
  });

  it('a control group without variants: the others get the message, recorded as `default`', async () => {
    const w = await world('control-only', 40);
    const res = await create(w.secret, { control_percent: 50 });
    const campaignId = res.json<{ campaign_id: string }>().campaign_id;
    const triggerId = await triggerOk(ctx(), campaignId, {}, w.secret);
    await run();
    const rows = await ledger(triggerId);
    const control = rows.filter((r) => r.variant === CONTROL).length;
    expect(control).toBeGreaterThan(5);
    expect(rows.filter((r) => r.variant === 'default')).toHaveLength(40 - control);
    expect(w.tokens.filter((t) => received(t).length > 0)).toHaveLength(40 - control);
  });

  it('applies to event-triggered sends and to sends held by quiet hours, with the same variants', async () => {
    const w = await world('event', 30);
    const res = await create(w.secret, {
      api_triggered: false,
      event_trigger: { event: 'signup', delay: 0 },
      variants: VARIANTS,
      control_percent: 20,
      // Held now, sent at the window's end.
      quiet_hours: { start: hhmm(clock.now() - 2 * MINUTE), end: hhmm(clock.now() + 30 * MINUTE) },
    });
    expect(res.statusCode, res.body).toBe(201);
    const campaignId = res.json<{ campaign_id: string }>().campaign_id;
    const events = [...w.users.values()].map((u) => ({ project_user_id: u.puid, name: 'signup' }));
    const tracked = await json(ctx(), 'POST', '/api/v1/events', { events }, w.secret);
    expect(tracked.statusCode, tracked.body).toBe(200);
    await run();
    // Nothing sent yet: the control is recorded at once, the others are held.
    expect(w.tokens.filter((t) => received(t).length > 0)).toEqual([]);
    offset += 31 * MINUTE;
    await run();
    const experiment = { variants: VARIANTS, control_percent: 20, winner: null } as Experiment;
    const rows = (
      await sql<{ user_id: string; variant: string | null; status: string }>`
        select d.user_id, d.variant, d.status from trigger_deliveries d join campaign_triggers t on t.id = d.trigger_id
        where t.project_id = ${w.projectId} and t.campaign_id = ${campaignId}`.execute(ctx().database.db)
    ).rows;
    // One row per user: the control's at the event, the others' when the held send went.
    expect(rows).toHaveLength(30);
    for (const token of w.tokens) {
      const user = w.users.get(token)!;
      const variant = assignVariant(experiment, assignmentPoint(w.projectId, campaignId, user.id));
      expect(rows.find((r) => r.user_id === user.id)?.variant).toBe(variant);
      const got = received(token);
      if (variant === CONTROL) expect(got).toEqual([]);
      else expect(got.map((m) => m.data.herald_variant)).toEqual([variant]);
    }
  });

  it('a winner rule: the test slice gets the variants, the rest waits and then gets the variant opened more', async () => {
    const w = await world('winner', 80);
    const winner = { test_percent: 50, after: 'PT1H', metric: 'opened', fallback: 'none' };
    const res = await create(w.secret, { variants: VARIANTS, winner });
    expect(res.statusCode, res.body).toBe(201);
    const campaignId = res.json<{ campaign_id: string }>().campaign_id;
    const triggerId = await triggerOk(ctx(), campaignId, {}, w.secret);
    await run();
    const experiment = { variants: VARIANTS, control_percent: 0, winner } as Experiment;
    const test = new Map<string, string>();
    for (const token of w.tokens) {
      const v = assignVariant(experiment, assignmentPoint(w.projectId, campaignId, w.users.get(token)!.id));
      if (v !== 'awaiting_winner') test.set(token, v);
    }
    const status = await triggerStatus(ctx(), campaignId, triggerId, w.secret);
    expect(status.counters).toMatchObject({ accepted: test.size, held: 80 - test.size });
    // Every recipient of b opens, none of a: b wins by far.
    const sent = (
      await sql<{ message_id: string; variant: string }>`
        select message_id, variant from trigger_deliveries where trigger_id = ${triggerId}`.execute(ctx().database.db)
    ).rows;
    expect(sent).toHaveLength(test.size);
    for (const row of sent.filter((r) => r.variant === 'b')) {
      const opened = await ctx().inject({
        method: 'POST',
        url: `/api/v1/messages/${row.message_id}:open`,
        headers: w.secret,
      });
      expect(opened.statusCode, opened.body).toBe(200);
    }
    // Before the test ends nothing more goes; after it, the rest get b.
    offset += 30 * MINUTE;
    await run();
    expect(w.tokens.filter((t) => !test.has(t) && received(t).length > 0)).toEqual([]);
    offset += 31 * MINUTE;
    await run();
    for (const token of w.tokens) {
      const got = received(token);
      expect(got.map((m) => m.data.herald_variant)).toEqual([test.get(token) ?? 'b']);
    }
    const fired = (
      await sql<{ definition: string | Record<string, unknown> }>`
        select t.definition from campaign_triggers t join held_sends h on h.trigger_id = t.id
        where h.source_trigger_id = ${triggerId} limit 1`.execute(ctx().database.db)
    ).rows[0]!;
    const definition = (typeof fired.definition === 'string' ? JSON.parse(fired.definition) : fired.definition) as {
      winnerDecision: Record<string, unknown>;
    };
    expect(definition.winnerDecision).toMatchObject({ variant_id: 'b', basis: 'winner', best: 'b', metric: 'opened' });
  });

  it('a winner on the primary conversion goal; conversions carry their variant, the control group converts too', async () => {
    const w = await world('winner-conversion', 120);
    const goals = [{ event: 'purchase', deadline: '1d' }];
    const winner = { test_percent: 50, after: 'PT1H', metric: 'primary_conversion', fallback: 'none' };
    const noGoal = await create(w.secret, { variants: VARIANTS, winner });
    expect(noGoal.statusCode).toBe(400);
    expect(noGoal.json().error).toMatch(/primary_conversion" needs a conversion goal/);
    const res = await create(w.secret, { variants: VARIANTS, control_percent: 20, winner, conversion_goals: goals });
    expect(res.statusCode, res.body).toBe(201);
    const campaignId = res.json<{ campaign_id: string }>().campaign_id;
    const triggerId = await triggerOk(ctx(), campaignId, {}, w.secret);
    await run();
    const experiment = { variants: VARIANTS, control_percent: 20, winner } as Experiment;
    const groupOf = new Map<string, string>();
    for (const token of w.tokens)
      groupOf.set(token, assignVariant(experiment, assignmentPoint(w.projectId, campaignId, w.users.get(token)!.id)));
    // Everyone sent `a` in the test buys, and everyone in the control group; nobody sent `b`.
    const buyers = w.tokens.filter((t) => groupOf.get(t) === 'a' || groupOf.get(t) === CONTROL);
    for (const token of buyers) {
      const event = { project_user_id: w.users.get(token)!.puid, name: 'purchase' };
      const posted = await json(ctx(), 'POST', '/api/v1/events', event, w.secret);
      expect(posted.statusCode, posted.body).toBeLessThan(300);
    }
    const conversions = (
      await sql<{ variant: string | null; message_id: string | null }>`
        select variant, message_id from conversions where trigger_id = ${triggerId}`.execute(ctx().database.db)
    ).rows;
    const inA = w.tokens.filter((t) => groupOf.get(t) === 'a').length;
    const inControl = w.tokens.filter((t) => groupOf.get(t) === CONTROL).length;
    expect(inA).toBeGreaterThan(0);
    expect(inControl).toBeGreaterThan(0);
    expect(conversions.filter((c) => c.variant === 'a' && c.message_id !== null)).toHaveLength(inA);
    expect(conversions.filter((c) => c.variant === CONTROL && c.message_id === null)).toHaveLength(inControl);
    expect(conversions).toHaveLength(inA + inControl);
    // After the test the rest (not control) get `a`, decided on conversions.
    offset += 61 * MINUTE;
    await run();
    for (const token of w.tokens) {
      const group = groupOf.get(token)!;
      const got = received(token).map((m) => m.data.herald_variant);
      expect(got, token).toEqual(group === CONTROL ? [] : [group === 'awaiting_winner' ? 'a' : group]);
    }
    const fired = (
      await sql<{ definition: string | Record<string, unknown> }>`
        select t.definition from campaign_triggers t join held_sends h on h.trigger_id = t.id
        where h.source_trigger_id = ${triggerId} limit 1`.execute(ctx().database.db)
    ).rows[0]!;
    const definition = (typeof fired.definition === 'string' ? JSON.parse(fired.definition) : fired.definition) as {
      winnerDecision: Record<string, unknown>;
    };
    expect(definition.winnerDecision).toMatchObject({ variant_id: 'a', basis: 'winner', metric: 'primary_conversion' });
  });

  it('no clear winner and fallback none: the rest is recorded and sent nothing', async () => {
    const w = await world('no-winner', 30);
    const winner = { test_percent: 50, after: 'PT1H', metric: 'opened', fallback: 'none' };
    const res = await create(w.secret, { variants: VARIANTS, winner });
    const campaignId = res.json<{ campaign_id: string }>().campaign_id;
    const triggerId = await triggerOk(ctx(), campaignId, {}, w.secret);
    await run();
    offset += 61 * MINUTE;
    await run();
    const rows = (
      await sql<{ failure_reason: string | null }>`
        select d.failure_reason from trigger_deliveries d join held_sends h on h.trigger_id = d.trigger_id
        and h.user_id = d.user_id where h.source_trigger_id = ${triggerId}`.execute(ctx().database.db)
    ).rows;
    expect(rows.length).toBeGreaterThan(5);
    expect(new Set(rows.map((r) => r.failure_reason))).toEqual(new Set(['NO_WINNER']));
    expect(w.tokens.filter((t) => received(t).length > 0).length).toBe(30 - rows.length);
  });
});
