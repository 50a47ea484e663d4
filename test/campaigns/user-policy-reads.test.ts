import { describe, expect, it } from 'vitest';
import { createCampaignJobHandlers } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { setProjectLocalTime } from '../../src/campaigns/triggers/local-time-settings.service.js';
import { runCli } from '../helpers/processes.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import { createCampaign, createUser, json, triggerOk } from './campaign-helpers.js';

type Headers = Record<string, string>;
const MINUTE = 60_000;
const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

describe.each(TEST_DIALECTS)('a user’s held sends and cap counters on %s', (dialect) => {
  const fakes = useFakeProviders();
  const clock = { now: () => Date.now() };
  const ctx = useTestContext(dialect, {
    overrides: async (database) => ({ ...pushOverrides(fakes)(database), clock }),
  });
  const run = () =>
    runJobsUntilIdle(
      ctx().database.db,
      createCampaignJobHandlers({ push: ctx().herald.push, templates: ctx().herald.templates, clock }),
      { clock },
    );

  async function world(tag: string) {
    const { project, secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    await createUser(ctx(), 'u1', { tz: 'Asia/Tokyo' }, secret);
    await registerDevice(ctx(), secret, 'u1', { fcm_token: fcmToken(`${tag}-`) });
    return { project, secret: secret as Headers };
  }
  const send = async (secret: Headers, campaignId: string) => {
    const id = await triggerOk(ctx(), campaignId, { audience: { targets: [{ project_user_id: 'u1' }] } }, secret);
    await run();
    return id;
  };

  it('lists held sends, held first, with their campaign, source trigger and due time; filters by state', async () => {
    const w = await world('held');
    const end = clock.now() + 60 * MINUTE;
    const quiet = { start: hhmm(clock.now() - 2 * MINUTE), end: hhmm(end) };
    const campaignId = await createCampaign(ctx(), { quiet_hours: quiet }, w.secret);
    const triggerId = await send(w.secret, campaignId);

    const res = await json(ctx(), 'GET', '/api/v1/users/u1/held-sends', undefined, w.secret);
    expect(res.statusCode, res.body).toBe(200);
    const [held, ...rest] = res.json<{ held_sends: Record<string, unknown>[] }>().held_sends;
    expect(rest).toEqual([]);
    expect(held).toMatchObject({ campaign_id: campaignId, source_trigger_id: triggerId, state: 'held', reason: null });
    // Due at the window's end (whole minutes, UTC: the user has no zone property the project reads).
    expect(Math.abs(Date.parse(held!.due_at as string) - end)).toBeLessThan(MINUTE);

    const fired = await json(ctx(), 'GET', '/api/v1/users/u1/held-sends?state=fired', undefined, w.secret);
    expect(fired.json()).toEqual({ held_sends: [] });
    const bad = await json(ctx(), 'GET', '/api/v1/users/u1/held-sends?state=late', undefined, w.secret);
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/state/);
    const badLimit = await json(ctx(), 'GET', '/api/v1/users/u1/held-sends?limit=0', undefined, w.secret);
    expect(badLimit.statusCode).toBe(400);

    const cli = await runCli(
      ['users', 'held-sends', '--project', w.project.project_id, '--user', 'u1'],
      ctx().database.env,
    );
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toEqual(res.json());
  });

  it('counts the sends in each rule’s current window, in the user’s zone, per tag', async () => {
    const w = await world('caps');
    const put = await ctx().inject({
      method: 'PUT',
      url: '/api/v1/project/frequency-caps',
      headers: { ...w.secret, 'content-type': 'application/json' },
      payload: JSON.stringify({
        rules: [
          { max: 3, per: 'day' },
          { max: 2, per: { hours: 4 }, tag: 'promo' },
        ],
      }),
    });
    expect(put.statusCode, put.body).toBe(200);
    // The project reads each user's zone from `tz` (set through the CLI's service: there is no REST route).
    await setProjectLocalTime(ctx().database.db, w.project.project_id, { time_zone_property: 'tz' });
    const plain = await createCampaign(ctx(), {}, w.secret);
    const promo = await createCampaign(ctx(), { tags: ['promo'] }, w.secret);
    await send(w.secret, plain);
    await send(w.secret, promo);

    const res = await json(ctx(), 'GET', '/api/v1/users/u1/frequency-caps', undefined, w.secret);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{
      time_zone: string;
      rules: {
        max: number;
        per: unknown;
        tag: string | null;
        used: number;
        window_start: string;
        window_end: string;
      }[];
    }>();
    expect(body.time_zone).toBe('Asia/Tokyo');
    expect(body.rules.map(({ max, per, tag, used }) => ({ max, per, tag, used }))).toEqual([
      { max: 3, per: 'day', tag: null, used: 2 },
      { max: 2, per: { hours: 4 }, tag: 'promo', used: 1 },
    ]);
    // The day is Tokyo's: it starts at a local midnight (15:00 UTC) and lasts 24 hours.
    const day = body.rules[0]!;
    expect(new Date(day.window_start).getUTCHours()).toBe(15);
    expect(Date.parse(day.window_end) - Date.parse(day.window_start)).toBe(24 * 60 * MINUTE);
    const rolling = body.rules[1]!;
    expect(Date.parse(rolling.window_end) - Date.parse(rolling.window_start)).toBe(4 * 60 * MINUTE);

    const cli = await runCli(
      ['users', 'frequency-caps', '--project', w.project.project_id, '--user', 'u1'],
      ctx().database.env,
    );
    expect(cli.code, cli.stderr).toBe(0);
    expect((JSON.parse(cli.stdout) as typeof body).rules.map((r) => r.used)).toEqual([2, 1]);
  });

  it('answers 404 for an unknown user and never shows another project’s user', async () => {
    const a = await world('iso-a');
    const campaignId = await createCampaign(
      ctx(),
      { quiet_hours: { start: hhmm(clock.now() - 2 * MINUTE), end: hhmm(clock.now() + 60 * MINUTE) } },
      a.secret,
    );
    await send(a.secret, campaignId);
    const { secret: other } = await ctx().newProject('iso-b');
    for (const path of ['held-sends', 'frequency-caps']) {
      const missing = await json(ctx(), 'GET', `/api/v1/users/nobody/${path}`, undefined, a.secret);
      expect(missing.statusCode).toBe(404);
      expect(missing.json().error).toMatch(/nobody/);
      // u1 exists only in project a: project b's key does not see it.
      const foreign = await json(ctx(), 'GET', `/api/v1/users/u1/${path}`, undefined, other);
      expect(foreign.statusCode).toBe(404);
      const noKey = await ctx().inject({ method: 'GET', url: `/api/v1/users/u1/${path}` });
      expect(noKey.statusCode).toBe(401);
    }
    await createUser(ctx(), 'u1', {}, other);
    const theirs = await json(ctx(), 'GET', '/api/v1/users/u1/held-sends', undefined, other);
    expect(theirs.json()).toEqual({ held_sends: [] });
    const mine = await json(ctx(), 'GET', '/api/v1/users/u1/held-sends', undefined, a.secret);
    expect(mine.json<{ held_sends: unknown[] }>().held_sends).toHaveLength(1);
  });
});
