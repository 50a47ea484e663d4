import { describe, expect, it } from 'vitest';
import { createCampaignJobHandlers } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { windowStart } from '../../src/campaigns/policies/frequency-caps.js';
import { setProjectLocalTime } from '../../src/campaigns/triggers/local-time-settings.service.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import { createCampaign, createUser, json, triggerOk, triggerStatus } from './campaign-helpers.js';

type Headers = Record<string, string>;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const CAPS = '/api/v1/project/frequency-caps';

describe.each(TEST_DIALECTS)('frequency caps (rule `frequency-caps`) on %s', (dialect) => {
  const fakes = useFakeProviders();
  let offset = 0;
  const clock = { now: () => Date.now() + offset };
  const ctx = useTestContext(dialect, {
    overrides: async (database) => ({ ...pushOverrides(fakes)(database), clock }),
  });
  const runJobs = () =>
    runJobsUntilIdle(
      ctx().database.db,
      createCampaignJobHandlers({ push: ctx().herald.push, templates: ctx().herald.templates, clock }),
      { clock },
    );

  async function world(tag: string, users: Record<string, Record<string, unknown>> = { u0: {} }) {
    const { secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    for (const [id, properties] of Object.entries(users)) {
      await createUser(ctx(), id, properties, secret);
      await registerDevice(ctx(), secret, id, { fcm_token: fcmToken() });
    }
    return secret as Headers;
  }
  const putCaps = (secret: Headers, body: unknown) =>
    ctx().inject({
      method: 'PUT',
      url: CAPS,
      headers: { ...secret, 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });
  /** Triggers the campaign for these users, runs the fan-out and answers the trigger's counters. */
  const send = async (secret: Headers, campaignId: string, users: string[] = ['u0']) => {
    const id = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets: users.map((u) => ({ project_user_id: u })) } },
      secret,
    );
    await runJobs();
    const status = await triggerStatus(ctx(), campaignId, id, secret);
    expect(status.state).toBe('completed');
    return status.counters;
  };

  it('reads and replaces the rules; refuses what is not a rule set with a 400 and a message', async () => {
    const secret = await world('settings');
    const empty = await json(ctx(), 'GET', CAPS, undefined, secret);
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toEqual({ rules: [] });
    const rules = [
      { max: 3, per: 'day' },
      { max: 1, per: { hours: 4 } },
      { max: 5, per: { minutes: 90 } },
      { max: 2, per: 'week', tag: 'promo' },
    ];
    const put = await putCaps(secret, { rules });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toEqual({ rules });
    expect((await json(ctx(), 'GET', CAPS, undefined, secret)).json()).toEqual({ rules });

    const bad: [unknown, RegExp][] = [
      [{ rules: Array.from({ length: 11 }, () => ({ max: 1, per: 'day' })) }, /rules/],
      [{ rules: [{ max: 0, per: 'day' }] }, /max/],
      [{ rules: [{ max: 10_001, per: 'day' }] }, /max/],
      [{ rules: [{ max: 1, per: 'month' }] }, /per/],
      [{ rules: [{ max: 1, per: { minutes: 43_201 } }] }, /per/],
      [{ rules: [{ max: 1, per: { hours: 721 } }] }, /per/],
      [{ rules: [{ max: 1, per: { days: 1 } }] }, /per/],
      [{ rules: [{ max: 1, per: 'day', tag: 'no spaces' }] }, /tag/],
      [{ rules: [{ max: 1, per: 'day', channel: 'push' }] }, /.+/],
      [{ caps: [] }, /.+/],
      [[], /.+/],
    ];
    for (const [body, message] of bad) {
      const res = await putCaps(secret, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json<{ error: string }>().error).toMatch(message);
    }
    // Nothing refused was stored; an empty list removes the rules.
    expect((await json(ctx(), 'GET', CAPS, undefined, secret)).json()).toEqual({ rules });
    expect((await putCaps(secret, { rules: [] })).json()).toEqual({ rules: [] });
    expect((await json(ctx(), 'GET', CAPS, undefined, secret)).json()).toEqual({ rules: [] });
  });

  it('campaign fields: defaults shown, set and changed; bad values refused with a 400', async () => {
    const secret = await world('fields');
    const id = await createCampaign(ctx(), {}, secret);
    const read = async () => (await json(ctx(), 'GET', `/api/v1/campaigns/${id}`, undefined, secret)).json();
    expect(await read()).toMatchObject({
      critical: false,
      tags: [],
      respect_caps: true,
      counts_toward_caps: true,
      reeligibility: { mode: 'always' },
    });
    const patch = {
      critical: true,
      tags: ['promo', 'weekly'],
      respect_caps: false,
      counts_toward_caps: false,
      reeligibility: { mode: 'window', seconds: 86_400 },
    };
    const patched = await json(ctx(), 'PATCH', `/api/v1/campaigns/${id}`, patch, secret);
    expect(patched.statusCode, patched.body).toBe(200);
    expect(await read()).toMatchObject(patch);
    // A patch naming other fields keeps the policy.
    await json(ctx(), 'PATCH', `/api/v1/campaigns/${id}`, { name: 'Renamed' }, secret);
    expect(await read()).toMatchObject({ ...patch, name: 'Renamed' });

    const bad: Record<string, unknown>[] = [
      { tags: Array.from({ length: 11 }, (_, i) => `t${i}`) },
      { tags: ['a', 'a'] },
      { tags: ['bad tag'] },
      { tags: ['x'.repeat(65)] },
      { critical: 'yes' },
      { reeligibility: { mode: 'sometimes' } },
      { reeligibility: { mode: 'window', seconds: 0 } },
      { reeligibility: { mode: 'window', seconds: 31_536_001 } },
      { reeligibility: { mode: 'window' } },
      { reeligibility: { mode: 'once', seconds: 5 } },
    ];
    for (const body of bad) {
      const res = await json(ctx(), 'PATCH', `/api/v1/campaigns/${id}`, body, secret);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json<{ error: string }>().error.length).toBeGreaterThan(0);
      const created = await json(
        ctx(),
        'POST',
        '/api/v1/campaigns',
        { name: 'x', message: { title: 'x' }, ...body },
        secret,
      );
      expect(created.statusCode, JSON.stringify(body)).toBe(400);
    }
  });

  it('a rolling window: sends past the cap are skipped `FREQUENCY_CAPPED`, counted, in analytics, and free again later', async () => {
    const secret = await world('rolling');
    await putCaps(secret, { rules: [{ max: 2, per: { hours: 1 } }] });
    const campaignId = await createCampaign(ctx(), {}, secret);
    expect((await send(secret, campaignId)).accepted).toBe(1);
    offset += 10 * MINUTE;
    expect((await send(secret, campaignId)).accepted).toBe(1);
    offset += 10 * MINUTE;
    const capped = await send(secret, campaignId);
    expect(capped).toMatchObject({ accepted: 0, devices: 1, skipped: { frequency_capped: 1 } });
    const analytics = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/analytics`, undefined, secret);
    expect(analytics.json().totals.by_reason).toMatchObject({ FREQUENCY_CAPPED: 1 });
    // The first send leaves the hour: one slot is free again.
    offset += 41 * MINUTE;
    expect((await send(secret, campaignId)).accepted).toBe(1);
    expect((await send(secret, campaignId)).skipped).toEqual({ frequency_capped: 1 });
  });

  it('a tagged rule counts and limits only campaigns with its tag; rules combine', async () => {
    const secret = await world('tagged');
    await putCaps(secret, {
      rules: [
        { max: 1, per: 'day', tag: 'promo' },
        { max: 3, per: { hours: 2 } },
      ],
    });
    const promo = await createCampaign(ctx(), { tags: ['promo'] }, secret);
    const plain = await createCampaign(ctx(), {}, secret);
    expect((await send(secret, promo)).accepted).toBe(1);
    expect((await send(secret, promo)).skipped).toEqual({ frequency_capped: 1 });
    expect((await send(secret, plain)).accepted).toBe(1);
    expect((await send(secret, plain)).accepted).toBe(1);
    // The untagged rule counts every send: three already.
    expect((await send(secret, plain)).skipped).toEqual({ frequency_capped: 1 });
  });

  it("a calendar day is the user's own: a new local day frees the slot where the day turned", async () => {
    // A zone where it is now 23:xx, and one twelve hours away (its day does not turn within the hour).
    const now = new Date(clock.now());
    let east = 23 - now.getUTCHours();
    if (east > 14) east -= 24;
    const other = east - 12 >= -12 ? east - 12 : east + 12;
    const zone = (n: number) => (n === 0 ? 'UTC' : `Etc/GMT${n > 0 ? '-' : '+'}${Math.abs(n)}`);
    // The project reads zones from `tz` (its local-time settings), so `time_zone` is not what counts.
    const secret = await world('calendar', {
      late: { tz: zone(east), time_zone: zone(other) },
      noon: { tz: zone(other) },
    });
    await setProjectZoneProperty(secret, 'tz');
    await putCaps(secret, { rules: [{ max: 1, per: 'day' }] });
    const campaignId = await createCampaign(ctx(), {}, secret);
    expect((await send(secret, campaignId, ['late', 'noon'])).accepted).toBe(2);
    expect((await send(secret, campaignId, ['late', 'noon'])).skipped).toEqual({ frequency_capped: 2 });
    // Past local midnight for `late` (at most 61 minutes on): its new day has a slot, `noon`'s day goes on.
    const untilMidnight = HOUR - (now.getUTCMinutes() * MINUTE + now.getUTCSeconds() * 1000);
    offset += untilMidnight + MINUTE;
    const next = await send(secret, campaignId, ['late', 'noon']);
    expect(next).toMatchObject({ accepted: 1, skipped: { frequency_capped: 1 } });
  });

  it('`critical` and `respect_caps: false` campaigns bypass caps; `counts_toward_caps: false` sends are not counted', async () => {
    const secret = await world('bypass');
    await putCaps(secret, { rules: [{ max: 1, per: 'day' }] });
    const free = await createCampaign(ctx(), { counts_toward_caps: false }, secret);
    expect((await send(secret, free)).accepted).toBe(1);
    expect((await send(secret, free)).accepted).toBe(1);
    const normal = await createCampaign(ctx(), {}, secret);
    expect((await send(secret, normal)).accepted).toBe(1);
    expect((await send(secret, normal)).skipped).toEqual({ frequency_capped: 1 });
    const critical = await createCampaign(ctx(), { critical: true }, secret);
    expect((await send(secret, critical)).accepted).toBe(1);
    const ignoring = await createCampaign(ctx(), { respect_caps: false }, secret);
    expect((await send(secret, ignoring)).accepted).toBe(1);
  });

  it('a send no device accepted gives its slot back', async () => {
    const secret = await world('release');
    await putCaps(secret, { rules: [{ max: 1, per: 'day' }] });
    // Reads a property the user lacks: the render fails, nothing is accepted.
    const broken = await createCampaign(ctx(), { message: { title: 'Hi {{ user.first_name }}' } }, secret);
    expect((await send(secret, broken)).skipped).toEqual({ template_render_error: 1 });
    const normal = await createCampaign(ctx(), {}, secret);
    expect((await send(secret, normal)).accepted).toBe(1);
    expect((await send(secret, normal)).skipped).toEqual({ frequency_capped: 1 });
  });

  async function setProjectZoneProperty(secret: Headers, property: string) {
    await setProjectLocalTime(ctx().database.db, secret['x-service-project-id']!, { time_zone_property: property });
  }
});

describe('cap windows (rule `frequency-caps`)', () => {
  it("a calendar week starts on the user's Monday 00:00, a day at the user's midnight, a rolling window back from now", () => {
    const saturday = Date.parse('2026-11-28T10:00:00Z');
    expect(windowStart({ max: 1, per: 'week' }, saturday, 'Europe/Paris')).toBe(
      Date.parse('2026-11-23T00:00:00+01:00'),
    );
    // 03:00 UTC is still Friday evening in New York.
    const early = Date.parse('2026-11-28T03:00:00Z');
    expect(windowStart({ max: 1, per: 'day' }, early, 'America/New_York')).toBe(
      Date.parse('2026-11-27T00:00:00-05:00'),
    );
    expect(windowStart({ max: 1, per: 'week' }, early, 'America/New_York')).toBe(
      Date.parse('2026-11-23T00:00:00-05:00'),
    );
    // A Monday is its own week's first day.
    const monday = Date.parse('2026-11-23T12:00:00Z');
    expect(windowStart({ max: 1, per: 'week' }, monday, 'UTC')).toBe(Date.parse('2026-11-23T00:00:00Z'));
    expect(windowStart({ max: 1, per: { minutes: 90 } }, monday, 'UTC')).toBe(monday - 90 * MINUTE);
    expect(windowStart({ max: 1, per: { hours: 720 } }, monday, 'UTC')).toBe(monday - 720 * HOUR);
  });
});
