import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createCampaign, FAILED, json, MISSING_ID, trigger } from './campaign-helpers.js';

describe.each(TEST_DIALECTS)('trigger endpoint errors on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  let active: string;

  beforeAll(async () => {
    active = await createCampaign(ctx(), {
      campaign_id: 'welcome',
      message: { title: 'Hi', body: 'Code {{ trigger.code }}, {{ trigger.extra | default: "" }}' },
    });
  });

  const expect400 = async (res: Awaited<ReturnType<typeof trigger>>, message: string, reason: string) => {
    expect(res.statusCode, res.body).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toBe(message);
    expect(res.headers['x-error-reason']).toBe(reason);
    expect(res.headers['x-request-id']).toBeTruthy();
  };
  const raw = (url: string, payload?: string, contentType = 'application/json') =>
    ctx().inject({
      method: 'POST',
      url,
      headers: { ...ctx().secret, 'content-type': contentType },
      ...(payload === undefined ? {} : { payload }),
    });

  it('answers a trigger id for a valid call, also with an empty or absent body', async () => {
    for (const res of [await trigger(ctx(), active, { properties: { code: 'X1' } })]) {
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ trigger_id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    }
    const plain = await createCampaign(ctx(), { message: { title: 'Static' } });
    expect((await raw(`/api/v1/campaigns/${plain}:trigger`)).statusCode).toBe(200);
    expect((await raw(`/api/v1/campaigns/${plain}:trigger`, '')).statusCode).toBe(200);
    expect((await raw(`/api/v1/campaigns/${plain}:trigger`, '   ')).statusCode).toBe(200);
  });

  it('a missing or invalid campaign id: Campaign Id must be provided', async () => {
    await expect400(await raw('/api/v1/campaigns/:trigger', '{}'), MISSING_ID, 'MISSING_CAMPAIGN_ID');
    await expect400(await raw('/api/v1/campaigns/a%20b:trigger', '{}'), MISSING_ID, 'INVALID_CAMPAIGN_ID');
    await expect400(await raw(`/api/v1/campaigns/${'x'.repeat(200)}:trigger`, '{}'), MISSING_ID, 'INVALID_CAMPAIGN_ID');
    await expect400(await raw('/api/v1/campaigns/%zz:trigger', '{}'), MISSING_ID, 'INVALID_URL_ENCODING');
    await expect400(
      await raw(`/api/v1/campaigns/${'y'.repeat(5000)}:trigger`, '{}'),
      MISSING_ID,
      'PATH_PARAMETER_TOO_LONG',
    );
  });

  it('unknown, not API-triggered and inactive campaigns', async () => {
    await expect400(await trigger(ctx(), 'no-such-campaign', {}), FAILED, 'CAMPAIGN_NOT_FOUND');
    const manual = await createCampaign(ctx(), { api_triggered: false });
    await expect400(await trigger(ctx(), manual, {}), FAILED, 'CAMPAIGN_NOT_API_TRIGGERED');
    for (const status of ['draft', 'paused', 'archived']) {
      const id = await createCampaign(ctx(), { status });
      await expect400(await trigger(ctx(), id, {}), FAILED, 'CAMPAIGN_NOT_ACTIVE');
    }
    const other = await ctx().newProject('other');
    await expect400(
      await trigger(ctx(), active, { properties: { code: 'x' } }, { headers: other.secret }),
      FAILED,
      'CAMPAIGN_NOT_FOUND',
    );
  });

  it('malformed bodies: INVALID_TRIGGER_BODY', async () => {
    const url = `/api/v1/campaigns/${active}:trigger`;
    await expect400(await raw(url, '{"audience":'), FAILED, 'INVALID_TRIGGER_BODY');
    await expect400(await raw(url, '[1,2]'), FAILED, 'INVALID_TRIGGER_BODY');
    const bodies = [
      { audience: { targets: [{ project_user_id: 'a', device_id: 'b' }] }, properties: { code: 'x' } },
      { audience: { targets: [{}] }, properties: { code: 'x' } },
      { audience: { targets: [{ email: 'a@b' }] }, properties: { code: 'x' } },
      { audience: { targets: [{ user_id: 7 }] }, properties: { code: 'x' } },
      { audience: { targets: [] }, properties: { code: 'x' } },
      { audience: { broadcast: 'yes' }, properties: { code: 'x' } },
      { audience: {}, properties: { code: 'x' } },
      {
        audience: { targets: Array.from({ length: 1001 }, (_, i) => ({ project_user_id: `u${i}` })) },
        properties: { code: 'x' },
      },
      { properties: { code: null } },
      { properties: { code: { nested: true } } },
      { properties: ['x'] },
      { propertes: { code: 'x' } },
    ];
    for (const body of bodies) await expect400(await trigger(ctx(), active, body), FAILED, 'INVALID_TRIGGER_BODY');
  });

  it('malformed properties and audiences the schema refuses: INVALID_TRIGGER_BODY', async () => {
    const bodies = [
      { properties: { code: 'x', '': 1 } },
      { properties: { code: 'x', ['k'.repeat(129)]: 1 } },
      { properties: { code: 'x', 'line\nbreak': { nested: true } } },
      { properties: { code: 'x'.repeat(8193) } },
      { properties: Object.fromEntries(Array.from({ length: 257 }, (_, i) => [i === 0 ? 'code' : `k${i}`, i])) },
      { audience: { targets: [{ project_user_id: 'a' }], extra: 1 }, properties: { code: 'x' } },
      { audience: { broadcast: false }, properties: { code: 'x' } },
      { audience: { targets: [{ device_id: 'a\u0001b' }] }, properties: { code: 'x' } },
      { audience: { targets: [{ user_id: 'x'.repeat(256) }] }, properties: { code: 'x' } },
      { audience: 'everyone', properties: { code: 'x' } },
    ];
    for (const body of bodies) await expect400(await trigger(ctx(), active, body), FAILED, 'INVALID_TRIGGER_BODY');
    const fine = await trigger(ctx(), active, {
      audience: { broadcast: false, targets: [{ user_id: 'x'.repeat(255) }] },
      properties: { code: 'x', 'line\nbreak': 'flat', n: 1.5, ok: false },
    });
    expect(fine.statusCode, fine.body).toBe(200);
  });

  it('a bad campaign id answers its own message even when the body is malformed too', async () => {
    await expect400(await raw('/api/v1/campaigns/:trigger', '[1]'), MISSING_ID, 'MISSING_CAMPAIGN_ID');
    await expect400(await raw('/api/v1/campaigns/a%20b:trigger', '{"x":1}'), MISSING_ID, 'INVALID_CAMPAIGN_ID');
  });

  it('a dry_run other than true or false is refused, so a typo never triggers for real', async () => {
    const before = await json(ctx(), 'GET', `/api/v1/campaigns/${active}/triggers`);
    const res = await raw(`/api/v1/campaigns/${active}:trigger?dry_run=yes`, '{"properties":{"code":"x"}}');
    await expect400(res, FAILED, 'INVALID_QUERY');
    const after = await json(ctx(), 'GET', `/api/v1/campaigns/${active}/triggers`);
    expect(after.json()).toEqual(before.json());
  });

  it('broadcast ignores targets, even malformed ones', async () => {
    const res = await trigger(ctx(), active, {
      audience: { broadcast: true, targets: [{ nonsense: 1 }] },
      properties: { code: 'x' },
    });
    expect(res.statusCode, res.body).toBe(200);
  });

  it('a template property the trigger does not supply: MISSING_TRIGGER_PROPERTY (unless read through default)', async () => {
    await expect400(await trigger(ctx(), active, {}), FAILED, 'MISSING_TRIGGER_PROPERTY');
    await expect400(
      await trigger(ctx(), active, { properties: { extra: 'only the optional one' } }),
      FAILED,
      'MISSING_TRIGGER_PROPERTY',
    );
    const conditional = await createCampaign(ctx(), {
      message: { title: '{% if trigger.vip %}VIP{% endif %} {{ trigger["name"] }}' },
    });
    await expect400(
      await trigger(ctx(), conditional, { properties: { vip: true } }),
      FAILED,
      'MISSING_TRIGGER_PROPERTY',
    );
    expect((await trigger(ctx(), conditional, { properties: { vip: true, name: 'A' } })).statusCode).toBe(200);
    const audience = await createCampaign(ctx(), {
      audience_conditions: { property: 'city', op: 'eq', value_from: 'trigger.city' },
    });
    await expect400(await trigger(ctx(), audience, {}), FAILED, 'MISSING_TRIGGER_PROPERTY');
    expect((await trigger(ctx(), audience, { properties: { city: 'Oslo' } })).statusCode).toBe(200);
  });

  it('needs the secret key', async () => {
    const res = await trigger(ctx(), active, { properties: { code: 'x' } }, { headers: ctx().public });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toHaveProperty('error');
  });

  it('replays an idempotent trigger and refuses the key with another body', async () => {
    const headers = { ...ctx().secret, 'idempotency-key': `k-${dialect}` };
    const first = await trigger(ctx(), active, { properties: { code: 'A' } }, { headers });
    const again = await trigger(ctx(), active, { properties: { code: 'A' } }, { headers });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first.json());
    expect(again.headers['idempotent-replayed']).toBe('true');
    const other = await trigger(ctx(), active, { properties: { code: 'B' } }, { headers });
    expect(other.statusCode).toBe(409);
    const list = await json(ctx(), 'GET', `/api/v1/campaigns/${active}/triggers`);
    const ids = list.json<{ triggers: Array<{ trigger_id: string }> }>().triggers.map((t) => t.trigger_id);
    expect(ids.filter((id) => id === first.json<{ trigger_id: string }>().trigger_id)).toHaveLength(1);
  });

  it('a path without the :trigger verb is not a route', async () => {
    const res = await raw(`/api/v1/campaigns/${active}:launch`, '{}');
    expect(res.statusCode).toBe(404);
  });
});
