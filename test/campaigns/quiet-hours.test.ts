import pino from 'pino';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createCampaignJobHandlers } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { createHerald } from '../../src/herald.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { unlimitedRateLimiter } from '../helpers/unlimited-rate-limiter.js';
import {
  configureProviders,
  fcmToken,
  pushOverrides,
  put,
  registerDevice,
  useFakeProviders,
} from '../push/push-helpers.js';
import { createCampaign, json, triggerOk, triggerStatus } from './campaign-helpers.js';

type Headers = Record<string, string>;
const MINUTE = 60_000;
const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

describe.each(TEST_DIALECTS)('quiet hours (rule `quiet-hours`) on %s', (dialect) => {
  const fakes = useFakeProviders();
  let offset = 0;
  const clock = { now: () => Date.now() + offset };
  const ctx = useTestContext(dialect, {
    overrides: async (database) => ({ ...pushOverrides(fakes)(database), clock }),
  });

  const handlers = () =>
    createCampaignJobHandlers({ push: ctx().herald.push, templates: ctx().herald.templates, clock });
  const run = () => runJobsUntilIdle(ctx().database.db, handlers(), { clock });
  const sentTo = (token: string) =>
    fakes().fcm.recorder.items.filter((i) => i.status === 200 && i.token === token).length;
  /** A window (UTC) that holds the clock's now, ending `minutes` later. */
  const around = (minutes: number) => ({
    start: hhmm(clock.now() - 2 * MINUTE),
    end: hhmm(clock.now() + minutes * MINUTE),
  });

  async function world(tag: string) {
    const { project, secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    const token = fcmToken(`${tag}-`);
    await registerDevice(ctx(), secret, 'u1', { fcm_token: token });
    const other = fcmToken(`${tag}-o-`);
    await registerDevice(ctx(), secret, 'u2', { fcm_token: other });
    return { project, secret: secret as Headers, token, other };
  }

  it('project default: GET, PUT, remove, and bad input answered 400 with a message', async () => {
    const { secret } = await ctx().newProject('settings');
    const get = () => json(ctx(), 'GET', '/api/v1/settings/quiet-hours', undefined, secret);
    expect((await get()).json()).toEqual({ quiet_hours: null });
    const set = await put(ctx(), secret, '/api/v1/settings/quiet-hours', {
      quiet_hours: { start: '21:00', end: '08:00' },
    });
    expect(set.statusCode, set.body).toBe(200);
    expect((await get()).json()).toEqual({ quiet_hours: { start: '21:00', end: '08:00' } });
    for (const [body, message] of [
      [{ quiet_hours: { start: '21:00', end: '21:00' } }, /must not be empty/],
      [{ quiet_hours: { start: '21:00', end: '8:00' } }, /quiet_hours\.end: expected a 24-hour time/],
      [{ quiet_hours: { start: '25:00', end: '08:00' } }, /quiet_hours\.start/],
      [{ quiet_hours: 'nights' }, /expected \{"start"/],
      [{ quiet_hours: { start: '21:00', end: '08:00', tz: 'UTC' } }, /unknown field "tz"/],
      [{}, /quiet_hours/],
    ] as const) {
      const res = await put(ctx(), secret, '/api/v1/settings/quiet-hours', body);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json<{ error: string }>().error).toMatch(message);
    }
    expect((await get()).json()).toEqual({ quiet_hours: { start: '21:00', end: '08:00' } });
    await put(ctx(), secret, '/api/v1/settings/quiet-hours', { quiet_hours: null });
    expect((await get()).json()).toEqual({ quiet_hours: null });
  });

  it("a user's do-not-disturb window: set, read, removed; unknown users 404; bad windows 400", async () => {
    const { secret } = await ctx().newProject('dnd');
    await json(ctx(), 'POST', '/api/v1/users', { project_user_id: 'ann', properties: {} }, secret);
    const url = '/api/v1/users/ann/quiet-hours';
    expect((await put(ctx(), secret, url, { quiet_hours: { start: '22:30', end: '07:00' } })).statusCode).toBe(200);
    expect((await json(ctx(), 'GET', url, undefined, secret)).json()).toEqual({
      quiet_hours: { start: '22:30', end: '07:00' },
    });
    const bad = await put(ctx(), secret, url, { quiet_hours: { start: '07:00', end: '07:00' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json<{ error: string }>().error).toMatch(/must not be empty/);
    expect((await put(ctx(), secret, '/api/v1/users/nobody/quiet-hours', { quiet_hours: null })).statusCode).toBe(404);
    expect((await put(ctx(), secret, url, { quiet_hours: null })).statusCode).toBe(200);
    expect((await json(ctx(), 'GET', url, undefined, secret)).json()).toEqual({ quiet_hours: null });
  });

  it('campaign fields: saved and shown; bad quiet_hours and max_sends_per_minute answered 400', async () => {
    const { secret } = await ctx().newProject('fields');
    const base = { name: 'Q', status: 'active', api_triggered: true, message: { title: 'Hi' } };
    const ok = await json(
      ctx(),
      'POST',
      '/api/v1/campaigns',
      { ...base, quiet_hours: false, max_sends_per_minute: 600 },
      secret,
    );
    expect(ok.statusCode, ok.body).toBe(201);
    expect(ok.json()).toMatchObject({ quiet_hours: false, max_sends_per_minute: 600 });
    const id = ok.json<{ campaign_id: string }>().campaign_id;
    const patched = await json(
      ctx(),
      'PATCH',
      `/api/v1/campaigns/${id}`,
      { quiet_hours: { start: '20:00', end: '09:00' } },
      secret,
    );
    expect(patched.json()).toMatchObject({ quiet_hours: { start: '20:00', end: '09:00' }, max_sends_per_minute: 600 });
    for (const [fields, message] of [
      [{ quiet_hours: { start: '20:00', end: '20:00' } }, /quiet_hours: start and end/],
      [{ quiet_hours: true }, /quiet_hours/],
      [{ max_sends_per_minute: 10 }, /max_sends_per_minute/],
      [{ max_sends_per_minute: 2_000_000 }, /max_sends_per_minute/],
      [{ max_sends_per_minute: 100.5 }, /max_sends_per_minute/],
    ] as const) {
      const res = await json(ctx(), 'POST', '/api/v1/campaigns', { ...base, ...fields }, secret);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json<{ error: string }>().error).toMatch(message);
    }
  });

  it('a held send survives a restart and goes out at the window end, re-checked then', async () => {
    const w = await world('held');
    const campaignId = await createCampaign(ctx(), { quiet_hours: around(60) }, w.secret);
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets: [{ project_user_id: 'u1' }] } },
      w.secret,
    );
    await run();
    const status = await triggerStatus(ctx(), campaignId, triggerId, w.secret);
    expect(status.state).toBe('completed');
    expect(status.counters).toMatchObject({ eligible: 1, accepted: 0, held: 1 });
    expect(sentTo(w.token)).toBe(0);
    // Nothing goes before the window ends.
    offset += 30 * MINUTE;
    await run();
    expect(sentTo(w.token)).toBe(0);

    // A new Herald on the same database (a restart), at the window's end.
    offset += 31 * MINUTE;
    const restarted = createHerald(ctx().config, {
      database: ctx().database,
      clock,
      logger: pino({ level: 'silent' }),
      rateLimiter: unlimitedRateLimiter,
      push: { ca: fakes().tls.caPem },
    });
    try {
      await runJobsUntilIdle(ctx().database.db, restarted.jobHandlers, { clock });
    } finally {
      await restarted.close();
    }
    expect(sentTo(w.token)).toBe(1);
    const rows = await sql<{
      state: string;
      trigger_id: string;
    }>`select state, trigger_id from held_sends where source_trigger_id = ${triggerId}`.execute(ctx().database.db);
    expect(rows.rows).toHaveLength(1);
    expect(rows.rows[0]!.state).toBe('fired');
    const fired = await triggerStatus(ctx(), campaignId, rows.rows[0]!.trigger_id, w.secret);
    expect(fired.counters).toMatchObject({ targets: 1, accepted: 1 });
    expect(fired.counters.held ?? 0).toBe(0);
    // Running everything again sends nothing more.
    await run();
    expect(sentTo(w.token)).toBe(1);
  });

  it('a critical campaign is never held, by its own window or a do-not-disturb one', async () => {
    const w = await world('critical');
    await put(ctx(), w.secret, '/api/v1/users/u1/quiet-hours', { quiet_hours: around(30) });
    const campaignId = await createCampaign(ctx(), { quiet_hours: around(60), critical: true }, w.secret);
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets: [{ project_user_id: 'u1' }] } },
      w.secret,
    );
    await run();
    const status = await triggerStatus(ctx(), campaignId, triggerId, w.secret);
    expect(status.counters).toMatchObject({ eligible: 1, accepted: 1 });
    expect(status.counters.held ?? 0).toBe(0);
    expect(sentTo(w.token)).toBe(1);
  });

  it("a user's do-not-disturb window holds only that user; a campaign with quiet_hours false ignores the project default", async () => {
    const w = await world('dnd-send');
    await put(ctx(), w.secret, '/api/v1/settings/quiet-hours', { quiet_hours: around(60) });
    await put(ctx(), w.secret, '/api/v1/users/u1/quiet-hours', { quiet_hours: around(30) });
    const campaignId = await createCampaign(ctx(), { quiet_hours: false }, w.secret);
    const triggerId = await triggerOk(ctx(), campaignId, { audience: { broadcast: true } }, w.secret);
    await run();
    expect(sentTo(w.other)).toBe(1);
    expect(sentTo(w.token)).toBe(0);
    expect((await triggerStatus(ctx(), campaignId, triggerId, w.secret)).counters).toMatchObject({
      accepted: 1,
      held: 1,
    });
    offset += 31 * MINUTE;
    await run();
    expect(sentTo(w.token)).toBe(1);
    expect(sentTo(w.other)).toBe(1);
  });

  it('the project default applies to campaigns with quiet_hours null; a paused campaign cancels its held sends for good', async () => {
    const w = await world('paused');
    await put(ctx(), w.secret, '/api/v1/settings/quiet-hours', { quiet_hours: around(20) });
    const campaignId = await createCampaign(ctx(), {}, w.secret);
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets: [{ project_user_id: 'u1' }] } },
      w.secret,
    );
    await run();
    expect((await triggerStatus(ctx(), campaignId, triggerId, w.secret)).counters).toMatchObject({ held: 1 });
    await json(ctx(), 'PATCH', `/api/v1/campaigns/${campaignId}`, { status: 'paused' }, w.secret);
    // Re-activated before the window ends: what the pause canceled stays canceled.
    await json(ctx(), 'PATCH', `/api/v1/campaigns/${campaignId}`, { status: 'active' }, w.secret);
    offset += 21 * MINUTE;
    await run();
    expect(sentTo(w.token)).toBe(0);
    const rows = await sql<{
      state: string;
      reason: string;
    }>`select state, reason from held_sends where source_trigger_id = ${triggerId}`.execute(ctx().database.db);
    expect(rows.rows).toEqual([{ state: 'canceled', reason: 'campaign_not_active' }]);
  });

  it('at the window end the segment is read again: a user who left it is skipped, not sent', async () => {
    const w = await world('recheck');
    await json(ctx(), 'POST', '/api/v1/users', { project_user_id: 'u1', properties: { plan: 'pro' } }, w.secret);
    const campaignId = await createCampaign(
      ctx(),
      { quiet_hours: around(45), segment: { property: 'plan', op: 'eq', value: 'pro' } },
      w.secret,
    );
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets: [{ project_user_id: 'u1' }] } },
      w.secret,
    );
    await run();
    expect((await triggerStatus(ctx(), campaignId, triggerId, w.secret)).counters).toMatchObject({ held: 1 });
    await json(ctx(), 'POST', '/api/v1/users', { project_user_id: 'u1', properties: { plan: 'free' } }, w.secret);
    offset += 46 * MINUTE;
    await run();
    expect(sentTo(w.token)).toBe(0);
    const held = await sql<{
      trigger_id: string;
    }>`select trigger_id from held_sends where source_trigger_id = ${triggerId}`.execute(ctx().database.db);
    const fired = await triggerStatus(ctx(), campaignId, held.rows[0]!.trigger_id, w.secret);
    expect(fired.counters).toMatchObject({ targets: 1, accepted: 0, skipped: { not_in_segment: 1 } });
  });

  it("at the window end the user's topic choice and the caps are read again", async () => {
    const w = await world('recheck-policy');
    const topic = await json(ctx(), 'POST', '/api/v1/topics', { key: 'news', name: 'News' }, w.secret);
    expect(topic.statusCode, topic.body).toBe(201);
    // Rolling, not a calendar day: the file's clock offsets may carry a run past midnight.
    const caps = await put(ctx(), w.secret, '/api/v1/project/frequency-caps', {
      rules: [{ max: 1, per: { hours: 24 } }],
    });
    expect(caps.statusCode, caps.body).toBe(200);
    const campaignId = await createCampaign(ctx(), { quiet_hours: around(45), topic: 'news' }, w.secret);
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets: [{ project_user_id: 'u1' }, { project_user_id: 'u2' }] } },
      w.secret,
    );
    await run();
    expect((await triggerStatus(ctx(), campaignId, triggerId, w.secret)).counters).toMatchObject({ held: 2 });
    // While they wait: u1 leaves the topic, u2 gets another campaign's push (its one push of the day).
    const optOut = await put(ctx(), w.secret, '/api/v1/users/u1/preferences', { topics: { news: 'unsubscribed' } });
    expect(optOut.statusCode, optOut.body).toBe(200);
    const other = await createCampaign(ctx(), { quiet_hours: false }, w.secret);
    await triggerOk(ctx(), other, { audience: { targets: [{ project_user_id: 'u2' }] } }, w.secret);
    await run();
    expect(sentTo(w.other)).toBe(1);
    offset += 46 * MINUTE;
    await run();
    expect(sentTo(w.token)).toBe(0);
    expect(sentTo(w.other)).toBe(1);
    const held = await sql<{
      trigger_id: string;
    }>`select distinct trigger_id from held_sends where source_trigger_id = ${triggerId}`.execute(ctx().database.db);
    expect(held.rows).toHaveLength(1);
    const fired = await triggerStatus(ctx(), campaignId, held.rows[0]!.trigger_id, w.secret);
    expect(fired.counters).toMatchObject({ targets: 2, accepted: 0 });
    expect(fired.counters.skipped).toMatchObject({ unsubscribed: 1, frequency_capped: 1 });
  });

  it('direct sends (messages:send) are not held, and accept ignore_quiet_hours', async () => {
    const w = await world('direct');
    await put(ctx(), w.secret, '/api/v1/users/u1/quiet-hours', { quiet_hours: around(60) });
    for (const extra of [{}, { ignore_quiet_hours: true }]) {
      const res = await json(
        ctx(),
        'POST',
        '/api/v1/messages:send',
        { push_notifications: [{ target: { project_user_id: 'u1' }, title: 'Now', ...extra }] },
        w.secret,
      );
      expect(res.statusCode, res.body).toBe(200);
    }
    expect(sentTo(w.token)).toBe(2);
  });
});
