import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import {
  apnsToken,
  configureProviders,
  fcmToken,
  post,
  pushOverrides,
  registerDevice,
  S,
  sendToDevices,
  useFakeProviders,
  type WireResult,
} from './push-helpers.js';

// Web Push subscriptions registered here point at the stand-in on loopback.
const LOOPBACK_WEB_PUSH = { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' };

const fakes = useFakeProviders();

describe.each(TEST_DIALECTS)('push payloads and results on %s', (dialect) => {
  const ctx = useTestContext(dialect, { env: LOOPBACK_WEB_PUSH, overrides: pushOverrides(fakes) });

  const item = (target: object) => ({
    target,
    title: 'Hello',
    body: 'World',
    image_url: 'https://img.example.com/a.png',
    landing_url: 'https://example.com/deal?id=7',
  });

  it('maps title, body, image and landing URL into each provider payload', async () => {
    const { fcmProject, topic } = await configureProviders(ctx(), ctx().secret, fakes());
    const fcm = fcmToken();
    const apns = apnsToken();
    const sub = fakes().webpush.subscription();
    const ids = [
      await registerDevice(ctx(), ctx().secret, 'map-user', { fcm_token: fcm }),
      await registerDevice(ctx(), ctx().secret, 'map-user', { apns_token: apns }),
      await registerDevice(ctx(), ctx().secret, 'map-user', { web_push_subscription: sub }),
    ];
    const results = await sendToDevices(
      ctx(),
      ctx().secret,
      ids.map((device_id) => item({ device_id })),
    );
    expect(results.map((r) => r.status)).toEqual([S('ACCEPTED'), S('ACCEPTED'), S('ACCEPTED')]);

    const fcmGot = fakes().fcm.recorder.items.find((r) => r.token === fcm)!;
    expect(fcmGot.headers[':path']).toBe(`/v1/projects/${fcmProject}/messages:send`);
    expect(fcmGot.body).toEqual({
      token: fcm,
      notification: { title: 'Hello', body: 'World', image: 'https://img.example.com/a.png' },
      data: { herald_message_id: results[0]!.message_id, landing_url: 'https://example.com/deal?id=7' },
      apns: { payload: { aps: { 'mutable-content': 1 } } },
    });
    // Every value once: the image URL and the landing URL appear exactly one time in the message.
    expect(JSON.stringify(fcmGot.body).split('https://img.example.com/a.png')).toHaveLength(2);
    expect(JSON.stringify(fcmGot.body).split('https://example.com/deal?id=7')).toHaveLength(2);
    expect(results[0]!.additional_params.fcm_message_id).toMatch(new RegExp(`^projects/${fcmProject}/messages/`));

    const apnsGot = fakes().apns.recorder.items.find((r) => r.token === apns)!;
    expect(apnsGot.headers['apns-topic']).toBe(topic);
    expect(apnsGot.headers['apns-push-type']).toBe('alert');
    expect(apnsGot.headers['apns-priority']).toBe('10');
    expect(Number(apnsGot.headers['apns-expiration'])).toBeGreaterThan(Date.now() / 1000 + 27 * 86400);
    expect(apnsGot.body).toEqual({
      aps: { alert: { title: 'Hello', body: 'World' }, 'mutable-content': 1 },
      herald_message_id: results[1]!.message_id,
      image_url: 'https://img.example.com/a.png',
      landing_url: 'https://example.com/deal?id=7',
    });
    expect(results[1]!.additional_params.fcm_message_id).toBe(results[1]!.message_id);

    const webGot = fakes().webpush.recorder.items.find((r) => sub.endpoint.endsWith(r.token))!;
    expect(webGot.headers['content-encoding']).toBe('aes128gcm');
    expect(String(webGot.headers.authorization)).toMatch(/^vapid t=.+, k=.+$/);
    expect(webGot.body).toEqual({
      title: 'Hello',
      body: 'World',
      image: 'https://img.example.com/a.png',
      url: 'https://example.com/deal?id=7',
      message_id: results[2]!.message_id,
      data: {},
    });
    expect(results[2]!.additional_params.fcm_message_id).toMatch(/\/message\//);
  });

  it('sends a user target to all three devices and reports each (rule `push-results`), in both response variants', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const ids = [
      await registerDevice(ctx(), ctx().secret, 'three', { fcm_token: fcmToken() }),
      await registerDevice(ctx(), ctx().secret, 'three', { apns_token: apnsToken() }),
      await registerDevice(ctx(), ctx().secret, 'three', { web_push_subscription: fakes().webpush.subscription() }),
    ];
    const res = await post(ctx(), ctx().secret, '/api/v1/messages:send', {
      push_notifications: [
        { target: { project_user_id: 'three' }, title: 'Hi' },
        { target: { project_user_id: 'nobody' }, body: 'x' },
      ],
    });
    expect(res.statusCode).toBe(200);
    const [three, nobody] = res.json<{ delivery_results: WireResult[] }>().delivery_results;
    expect(three).not.toHaveProperty('status');
    expect(three).not.toHaveProperty('created_at');
    expect(three!.deliveries.map((d) => [d.device_id, d.provider, d.status])).toEqual([
      [ids[0], 'fcm', S('ACCEPTED')],
      [ids[1], 'apns', S('ACCEPTED')],
      [ids[2], 'webpush', S('ACCEPTED')],
    ]);
    expect(three!.message_id).toBe(three!.deliveries[0]!.message_id);
    expect(three!.additional_params).toEqual({
      device_id: ids[0],
      fcm_message_id: three!.deliveries[0]!.fcm_message_id,
      failure_reason: '',
    });
    expect(new Set(three!.deliveries.map((d) => d.message_id)).size).toBe(3);
    expect(nobody).toEqual({
      message_id: expect.any(String),
      additional_params: { device_id: '', fcm_message_id: '', failure_reason: 'USER_NOT_FOUND' },
      deliveries: [],
    });

    const [device] = await sendToDevices(ctx(), ctx().secret, [{ target: { project_user_id: 'three' }, title: 'Hi' }]);
    expect(device!.status).toBe(S('ACCEPTED'));
    expect(Date.parse(device!.created_at!)).toBeGreaterThan(Date.now() - 60_000);
    expect(device!.deliveries).toHaveLength(3);
  });

  it('stores every message and returns it by id; unknown ids and other projects get 404', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const deviceId = await registerDevice(ctx(), ctx().secret, 'lookup', { fcm_token: fcmToken() });
    const [sent, missing] = await sendToDevices(ctx(), ctx().secret, [
      { target: { device_id: deviceId }, title: 'T' },
      { target: { device_id: 'no-such-device' }, title: 'T' },
    ]);
    const got = await ctx().inject({
      method: 'GET',
      url: `/api/v1/messages/${sent!.message_id}`,
      headers: ctx().secret,
    });
    expect(got.statusCode).toBe(200);
    expect(got.json()).toMatchObject({
      message_id: sent!.message_id,
      status: S('ACCEPTED'),
      target: { device_id: deviceId },
      provider: 'fcm',
      additional_params: {
        device_id: deviceId,
        fcm_message_id: sent!.additional_params.fcm_message_id,
        failure_reason: '',
      },
      attempts: 1,
    });
    const none = await ctx().inject({
      method: 'GET',
      url: `/api/v1/messages/${missing!.message_id}`,
      headers: ctx().secret,
    });
    expect(none.json()).toMatchObject({
      status: S('NO_DEVICE'),
      target: { device_id: 'no-such-device' },
      provider: null,
      additional_params: { failure_reason: 'DEVICE_NOT_FOUND' },
    });

    const other = await ctx().newProject('other');
    const foreign = await ctx().inject({
      method: 'GET',
      url: `/api/v1/messages/${sent!.message_id}`,
      headers: other.secret,
    });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json()).toHaveProperty('error');
    const unknown = await ctx().inject({
      method: 'GET',
      url: '/api/v1/messages/00000000-0000-0000-0000-000000000000',
      headers: ctx().secret,
    });
    expect(unknown.statusCode).toBe(404);
  });

  it("keeps one project's devices and credentials out of another's sends", async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const deviceId = await registerDevice(ctx(), ctx().secret, 'mine', { fcm_token: fcmToken() });
    const other = await ctx().newProject('other');
    const [byDevice, byUser] = await sendToDevices(ctx(), other.secret, [
      { target: { device_id: deviceId }, title: 'x' },
      { target: { project_user_id: 'mine' }, title: 'x' },
    ]);
    expect([byDevice!.status, byDevice!.additional_params.failure_reason]).toEqual([
      S('NO_DEVICE'),
      'DEVICE_NOT_FOUND',
    ]);
    expect([byUser!.status, byUser!.additional_params.failure_reason]).toEqual([S('NO_DEVICE'), 'USER_NOT_FOUND']);

    // The other project has a device but no credentials: ours are not used for it.
    const theirs = await registerDevice(ctx(), other.secret, 'theirs', { fcm_token: fcmToken() });
    const [noCreds] = await sendToDevices(ctx(), other.secret, [{ target: { device_id: theirs }, title: 'x' }]);
    expect([noCreds!.status, noCreds!.additional_params.failure_reason]).toEqual([
      S('PROVIDER_AUTH_ERROR'),
      'CREDENTIALS_NOT_CONFIGURED',
    ]);
    const view = await ctx().inject({ method: 'GET', url: '/api/v1/push-credentials', headers: other.secret });
    expect(view.json()).toEqual({ fcm: null, apns: null, webpush: null });
  });

  it('replays an idempotent send without sending again (rule `rest-idempotency`)', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const token = fcmToken();
    const deviceId = await registerDevice(ctx(), ctx().secret, 'idem', { fcm_token: token });
    const body = { push_notifications: [{ target: { device_id: deviceId }, title: 'once' }] };
    const headers = { ...ctx().secret, 'idempotency-key': `k-${dialect}` };
    const first = await post(ctx(), headers, '/api/v1/send-push-notifications', body);
    const second = await post(ctx(), headers, '/api/v1/send-push-notifications', body);
    expect(second.statusCode).toBe(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.json()).toEqual(first.json());
    expect(fakes().fcm.recorder.items.filter((r) => r.token === token)).toHaveLength(1);
    const changed = await post(ctx(), headers, '/api/v1/send-push-notifications', {
      push_notifications: [{ target: { device_id: deviceId }, title: 'other' }],
    });
    expect(changed.statusCode).toBe(409);
  });
});
