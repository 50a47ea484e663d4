import { describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { waitFor } from '../helpers/wait-for.js';

interface DeviceBody {
  device_id: string;
  project_user_id: string;
  platform: string;
  provider: string;
  status: string;
  created_at: string;
  updated_at: string;
}

const webPush = (n: number) => ({
  endpoint: `https://push.example.com/send/${n}`,
  keys: {
    p256dh: `BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM${n}`,
    auth: 'tBHItJI5svbpez7KI4CCXg',
  },
});
const apnsToken = 'a'.repeat(64);

function expectJson400(res: LightMyRequestResponse): void {
  expect(res.statusCode, res.body).toBe(400);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.json()).toEqual({ error: expect.any(String) });
}

describe.each(TEST_DIALECTS)('devices (rule `devices`) on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  const register = (body: object, headers = ctx().public) =>
    ctx().inject({ method: 'POST', url: '/api/v1/devices', headers, payload: body });
  const list = async (projectUserId: string) => {
    const res = await ctx().inject({
      method: 'GET',
      url: `/api/v1/users/${encodeURIComponent(projectUserId)}/devices`,
      headers: ctx().secret,
    });
    return res.json<{ devices: DeviceBody[] }>().devices;
  };
  const deviceRows = (pushAddress: string) =>
    ctx()
      .database.db.selectFrom('devices')
      .selectAll()
      .where('project_id', '=', ctx().project.project_id)
      .where('push_address', '=', pushAddress)
      .execute();

  it('registers an FCM, an APNs and a Web Push device, creating the user', async () => {
    const fcm = await register({ project_user_id: 'multi', platform: 'android', fcm_token: 'fcm-token-1' });
    const apns = await register({ project_user_id: 'multi', platform: 'ios', apns_token: apnsToken });
    const web = await register({ project_user_id: 'multi', platform: 'web', web_push_subscription: webPush(1) });
    for (const res of [fcm, apns, web]) expect(res.statusCode, res.body).toBe(200);
    expect(fcm.json<DeviceBody>()).toMatchObject({
      project_user_id: 'multi',
      platform: 'android',
      provider: 'fcm',
      status: 'active',
    });
    expect(apns.json<DeviceBody>().provider).toBe('apns');
    expect(web.json<DeviceBody>().provider).toBe('webpush');
    expect(fcm.json<DeviceBody>().device_id).toMatch(/^[0-9a-f-]{36}$/);
    const devices = await list('multi');
    expect(devices.map((d) => d.provider).sort()).toEqual(['apns', 'fcm', 'webpush']);
    // The user exists now, with no properties.
    const user = await ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: ctx().secret,
      payload: { project_user_id: 'multi' },
    });
    expect(user.json()).toEqual({ properties: {} });
  });

  it('an FCM token may serve any platform', async () => {
    for (const platform of ['ios', 'web'])
      expect((await register({ project_user_id: 'fcm-any', platform, fcm_token: `fcm-${platform}` })).statusCode).toBe(
        200,
      );
  });

  it.each([
    ['no address', { project_user_id: 'bad', platform: 'android' }],
    ['two addresses', { project_user_id: 'bad', platform: 'ios', fcm_token: 't', apns_token: apnsToken }],
    ['APNs on android', { project_user_id: 'bad', platform: 'android', apns_token: apnsToken }],
    ['Web Push on ios', { project_user_id: 'bad', platform: 'ios', web_push_subscription: webPush(2) }],
    ['an unknown platform', { project_user_id: 'bad', platform: 'windows', fcm_token: 't' }],
    ['no platform', { project_user_id: 'bad', fcm_token: 't' }],
    ['no user', { platform: 'android', fcm_token: 't' }],
    ['an invalid user id', { project_user_id: '', platform: 'android', fcm_token: 't' }],
    ['an APNs token that is not hex', { project_user_id: 'bad', platform: 'ios', apns_token: 'zz' }],
    ['an empty FCM token', { project_user_id: 'bad', platform: 'android', fcm_token: '' }],
    ['an FCM token with a NUL', { project_user_id: 'bad', platform: 'android', fcm_token: 'a\u0000b' }],
    ['an FCM token with spaces', { project_user_id: 'bad', platform: 'android', fcm_token: 'a b' }],
    [
      'a Web Push endpoint over http',
      {
        project_user_id: 'bad',
        platform: 'web',
        web_push_subscription: { ...webPush(3), endpoint: 'http://push.example.com/x' },
      },
    ],
    [
      'a Web Push endpoint with a control character',
      {
        project_user_id: 'bad',
        platform: 'web',
        web_push_subscription: { ...webPush(3), endpoint: 'https://push.example.com/\u0000' },
      },
    ],
    [
      'Web Push without keys',
      { project_user_id: 'bad', platform: 'web', web_push_subscription: { endpoint: 'https://push.example.com/x' } },
    ],
    ['a device id with spaces', { device_id: 'a b', project_user_id: 'bad', platform: 'android', fcm_token: 't' }],
    ['an unknown field', { project_user_id: 'bad', platform: 'android', fcm_token: 't', color: 'red' }],
  ])('refuses %s with a JSON 400', async (_label, body) => {
    expectJson400(await register(body));
  });

  it('refuses a malformed or non-object body with a JSON 400', async () => {
    expectJson400(
      await ctx().inject({
        method: 'POST',
        url: '/api/v1/devices',
        headers: { ...ctx().public, 'content-type': 'application/json' },
        payload: '{"platform":',
      }),
    );
    expectJson400(
      await ctx().inject({
        method: 'POST',
        url: '/api/v1/devices',
        headers: { ...ctx().public, 'content-type': 'application/json' },
        payload: '[]',
      }),
    );
  });

  it('re-registering a device refreshes it and keeps its creation time', async () => {
    const first = (
      await register({ device_id: 'phone-1', project_user_id: 'refresh', platform: 'android', fcm_token: 'old-token' })
    ).json<DeviceBody>();
    // The refresh must happen at a later millisecond for `updated_at` to move.
    await waitFor(() => Date.now() > Date.parse(first.updated_at), {
      what: 'the clock to pass the first registration',
    });
    const again = (
      await register({ device_id: 'phone-1', project_user_id: 'refresh', platform: 'android', fcm_token: 'new-token' })
    ).json<DeviceBody>();
    expect(again.device_id).toBe('phone-1');
    expect(again.created_at).toBe(first.created_at);
    expect(Date.parse(again.updated_at)).toBeGreaterThan(Date.parse(first.updated_at));
    expect(await deviceRows('old-token')).toHaveLength(0);
    expect(await deviceRows('new-token')).toHaveLength(1);
    expect(await list('refresh')).toHaveLength(1);
  });

  it('an address registered by another user moves to the new user', async () => {
    await register({
      device_id: 'old-phone',
      project_user_id: 'seller',
      platform: 'android',
      fcm_token: 'moving-token',
    });
    const moved = await register({
      device_id: 'new-phone',
      project_user_id: 'buyer',
      platform: 'android',
      fcm_token: 'moving-token',
    });
    expect(moved.statusCode).toBe(200);
    expect(await list('seller')).toEqual([]);
    expect((await list('buyer')).map((d) => d.device_id)).toEqual(['new-phone']);
    const rows = await deviceRows('moving-token');
    expect(rows.map((r) => r.device_id)).toEqual(['new-phone']);
    expect(
      await ctx().database.db.selectFrom('devices').select('device_id').where('device_id', '=', 'old-phone').execute(),
    ).toEqual([]);
  });

  it('the same device id re-registered for another user moves the device', async () => {
    await register({
      device_id: 'shared-tablet',
      project_user_id: 'first-owner',
      platform: 'web',
      web_push_subscription: webPush(4),
    });
    await register({
      device_id: 'shared-tablet',
      project_user_id: 'second-owner',
      platform: 'web',
      web_push_subscription: webPush(4),
    });
    expect(await list('first-owner')).toEqual([]);
    expect((await list('second-owner')).map((d) => d.device_id)).toEqual(['shared-tablet']);
  });

  it('APNs tokens are one address whatever their case', async () => {
    await register({ device_id: 'ios-a', project_user_id: 'case-a', platform: 'ios', apns_token: 'ABCDEF0123' });
    await register({ device_id: 'ios-b', project_user_id: 'case-b', platform: 'ios', apns_token: 'abcdef0123' });
    expect(await list('case-a')).toEqual([]);
    expect(await deviceRows('abcdef0123')).toHaveLength(1);
  });

  it('concurrent registrations of one address never fail and leave one owner', async () => {
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        register({
          device_id: `racer-${i}`,
          project_user_id: `racer-user-${i % 3}`,
          platform: 'android',
          fcm_token: 'contended-token',
        }),
      ),
    );
    expect(results.map((r) => r.statusCode)).toEqual(Array(12).fill(200));
    expect(await deviceRows('contended-token')).toHaveLength(1);
  });

  it('concurrent registrations of one device with different addresses leave one row', async () => {
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        register({ device_id: 'flapper', project_user_id: 'flap', platform: 'android', fcm_token: `flap-${i}` }),
      ),
    );
    expect(results.map((r) => r.statusCode)).toEqual(Array(4).fill(200));
    expect(await list('flap')).toHaveLength(1);
  });

  it('lists devices only for a known user and only with the secret key', async () => {
    expect(
      (await ctx().inject({ method: 'GET', url: '/api/v1/users/nobody/devices', headers: ctx().secret })).statusCode,
    ).toBe(404);
    await ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: ctx().secret,
      payload: { project_user_id: 'no-devices' },
    });
    expect(await list('no-devices')).toEqual([]);
  });

  it('deletes a device with the secret key; an unknown one is 200 {} too', async () => {
    await register({ device_id: 'to-delete', project_user_id: 'deleter', platform: 'android', fcm_token: 'delete-me' });
    const res = await ctx().inject({ method: 'DELETE', url: '/api/v1/devices/to-delete', headers: ctx().secret });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({});
    expect(await list('deleter')).toEqual([]);
    expect(
      (await ctx().inject({ method: 'DELETE', url: '/api/v1/devices/never-was', headers: ctx().secret })).json(),
    ).toEqual({});
    expect(
      (await ctx().inject({ method: 'DELETE', url: '/api/v1/devices/to-delete', headers: ctx().public })).statusCode,
    ).toBe(401);
  });
});
