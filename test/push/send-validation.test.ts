import fastJson from 'fast-json-stringify';
import { describe, expect, it } from 'vitest';
import { DeviceSendResponse, MessagesSendResponse } from '../../src/push/push.schemas.js';
import { rpc, v1Message } from '../a2a/a2a-helpers.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import {
  configureProviders,
  fcmToken,
  post,
  pushOverrides,
  registerDevice,
  S,
  useFakeProviders,
  type WireResult,
} from './push-helpers.js';

const fakes = useFakeProviders();
const INVALID = 'Invalid push notification parameters';
const ENDPOINTS = ['/api/v1/messages:send', '/api/v1/send-push-notifications'];

const ok = { target: { project_user_id: 'u' }, title: 't' };
const invalidBodies: Array<[string, unknown]> = [
  ['MISSING_PUSH_NOTIFICATIONS', {}],
  ['MISSING_PUSH_NOTIFICATIONS', { push_notifications: 'x' }],
  ['NO_PUSH_NOTIFICATIONS', { push_notifications: [] }],
  ['TOO_MANY_PUSH_NOTIFICATIONS', { push_notifications: Array(1001).fill(ok) }],
  ['INVALID_PUSH_NOTIFICATION', { push_notifications: [ok, 'x'] }],
  ['UNKNOWN_FIELD', { push_notifications: [{ ...ok, titel: 'typo' }] }],
  ['MISSING_TARGET', { push_notifications: [{ title: 't' }] }],
  ['INVALID_TARGET', { push_notifications: [{ target: {}, title: 't' }] }],
  ['INVALID_TARGET', { push_notifications: [{ target: { project_user_id: 'u', device_id: 'd' }, title: 't' }] }],
  ['INVALID_TARGET', { push_notifications: [{ target: { user_id: 'u' }, title: 't' }] }],
  ['INVALID_PROJECT_USER_ID', { push_notifications: [{ target: { project_user_id: '' }, title: 't' }] }],
  ['INVALID_PROJECT_USER_ID', { push_notifications: [{ target: { project_user_id: 'a\u0001b' }, title: 't' }] }],
  ['INVALID_PROJECT_USER_ID', { push_notifications: [{ target: { project_user_id: 'x'.repeat(256) }, title: 't' }] }],
  ['INVALID_DEVICE_ID', { push_notifications: [{ target: { device_id: 'has space' }, title: 't' }] }],
  ['INVALID_DEVICE_ID', { push_notifications: [{ target: { device_id: 7 }, title: 't' }] }],
  ['MISSING_TITLE_AND_BODY', { push_notifications: [{ target: { project_user_id: 'u' } }] }],
  ['MISSING_TITLE_AND_BODY', { push_notifications: [{ target: { project_user_id: 'u' }, title: '  ', body: '' }] }],
  ['INVALID_TITLE', { push_notifications: [{ target: { project_user_id: 'u' }, title: 5 }] }],
  ['INVALID_BODY', { push_notifications: [{ target: { project_user_id: 'u' }, title: 't', body: null }] }],
  ['TITLE_TOO_LONG', { push_notifications: [{ target: { project_user_id: 'u' }, title: 'x'.repeat(1025) }] }],
  ['BODY_TOO_LONG', { push_notifications: [{ target: { project_user_id: 'u' }, body: 'x'.repeat(4097) }] }],
  ['INVALID_IMAGE_URL', { push_notifications: [{ ...ok, image_url: 'not a url' }] }],
  ['INVALID_IMAGE_URL', { push_notifications: [{ ...ok, image_url: 'ftp://example.com/a.png' }] }],
  ['INVALID_LANDING_URL', { push_notifications: [{ ...ok, landing_url: '/relative/path' }] }],
  ['INVALID_LANDING_URL', { push_notifications: [{ ...ok, landing_url: 'javascript:alert(1)' }] }],
];

describe.each(TEST_DIALECTS)('push request validation on %s', (dialect) => {
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });

  it.each(invalidBodies)('answers the exact plain-text 400 for %s', async (reason, body) => {
    for (const url of ENDPOINTS) {
      const res = await post(ctx(), ctx().secret, url, body);
      expect([url, res.statusCode, res.body, res.headers['x-error-reason']]).toEqual([url, 400, INVALID, reason]);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
    }
  });

  it('answers 400 for a body that is not a JSON object, and sends nothing for a refused request', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const token = fcmToken();
    const deviceId = await registerDevice(ctx(), ctx().secret, 'refused', { fcm_token: token });
    for (const url of ENDPOINTS) {
      const notJson = await ctx().inject({
        method: 'POST',
        url,
        headers: { ...ctx().secret, 'content-type': 'application/json' },
        payload: '[1,2',
      });
      expect([notJson.statusCode, notJson.body]).toEqual([400, INVALID]);
      const mixed = await post(ctx(), ctx().secret, url, {
        push_notifications: [{ target: { device_id: deviceId }, title: 'ok' }, { target: { device_id: deviceId } }],
      });
      expect(mixed.statusCode).toBe(400);
    }
    expect(fakes().fcm.recorder.items.filter((r) => r.token === token)).toHaveLength(0);
  });

  it('names the rule and the first refused item for bad inputs the table above leaves out', async () => {
    const long = `https://example.com/${'a'.repeat(2049 - 'https://example.com/'.length)}`;
    const cases: Array<[string, unknown[]]> = [
      ['MISSING_TARGET', [ok, { target: 'user-1', title: 't' }]],
      ['MISSING_TARGET', [{ target: null, title: 't' }]],
      ['INVALID_TARGET', [{ target: { device_id: 'd', extra: 1 }, title: 't' }]],
      ['INVALID_DEVICE_ID', [{ target: { device_id: '' }, title: 't' }]],
      ['INVALID_DEVICE_ID', [{ target: { device_id: 'd'.repeat(256) }, title: 't' }]],
      ['INVALID_IMAGE_URL', [{ ...ok, image_url: long }]],
      ['INVALID_LANDING_URL', [{ ...ok, landing_url: 'https://' }]],
      ['INVALID_LANDING_URL', [{ ...ok, landing_url: 7 }]],
      ['MISSING_TITLE_AND_BODY', [ok, ok, { target: { device_id: 'd' }, body: '\n\t ' }]],
    ];
    for (const [reason, items] of cases) {
      const res = await post(ctx(), ctx().secret, ENDPOINTS[0]!, { push_notifications: items });
      expect([JSON.stringify(items), res.statusCode, res.body, res.headers['x-error-reason']]).toEqual([
        JSON.stringify(items),
        400,
        INVALID,
        reason,
      ]);
    }
    // The same rules through the A2A skill name the refused item.
    const notifications = [
      { target: { projectUserId: 'u' }, title: 't' },
      { target: { deviceId: 'has space' }, title: 't' },
    ];
    const res = await rpc(
      ctx(),
      'SendMessage',
      {
        message: v1Message({ skill: 'send-push-notification', notifications }),
      },
      { version: '1.0' },
    );
    expect(res.json<{ error: { code: number; message: string } }>().error).toMatchObject({
      code: -32602,
      message: 'Invalid push notification parameters: INVALID_DEVICE_ID',
    });
    expect(JSON.stringify(res.json())).toContain('notifications[1]');
  });

  it('accepts URLs WHATWG parses as absolute http(s), non-ASCII hosts and paths included', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const deviceId = await registerDevice(ctx(), ctx().secret, 'urls', { fcm_token: fcmToken() });
    const res = await post(ctx(), ctx().secret, ENDPOINTS[0]!, {
      push_notifications: [
        { target: { device_id: deviceId }, title: 't', image_url: 'https://例え.jp/café.png' },
        { target: { device_id: deviceId }, body: 'b', landing_url: 'HTTP://example.com/a?b=c#d' },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
  });

  it('refuses public keys and foreign projects (401)', async () => {
    for (const url of ENDPOINTS) {
      expect((await post(ctx(), ctx().public, url, { push_notifications: [ok] })).statusCode).toBe(401);
      expect(
        (
          await post(ctx(), { ...ctx().secret, 'x-service-project-id': 'someone-else' }, url, {
            push_notifications: [ok],
          })
        ).statusCode,
      ).toBe(401);
    }
  });

  it('sends a 1,000-item request and answers one result per item, in order', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const tokens = Array.from({ length: 10 }, () => fcmToken());
    const ids = await Promise.all(tokens.map((t) => registerDevice(ctx(), ctx().secret, 'bulk', { fcm_token: t })));
    const items = Array.from({ length: 1000 }, (_, i) =>
      i % 100 === 99
        ? { target: { project_user_id: `ghost-${i}` }, title: `n${i}` }
        : { target: { device_id: ids[i % 10]! }, title: `n${i}` },
    );
    const res = await post(ctx(), ctx().secret, '/api/v1/send-push-notifications', { push_notifications: items });
    expect(res.statusCode).toBe(200);
    const results = res.json<{ delivery_results: WireResult[] }>().delivery_results;
    expect(results).toHaveLength(1000);
    results.forEach((r, i) => {
      if (i % 100 === 99) expect([i, r.status]).toEqual([i, S('NO_DEVICE')]);
      else expect([i, r.status, r.additional_params.device_id]).toEqual([i, S('ACCEPTED'), ids[i % 10]]);
    });
    expect(new Set(results.map((r) => r.message_id)).size).toBe(1000);
    // Each FCM send carried its own item's title.
    const titles = fakes()
      .fcm.recorder.items.filter((r) => tokens.includes(r.token))
      .map((r) => (r.body as { notification: { title: string } }).notification.title);
    expect(titles).toHaveLength(990);
    expect(new Set(titles).size).toBe(990);
  });

  it('answers the bytes the response schema would write, JSON with or without an idempotency key', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const id = await registerDevice(ctx(), ctx().secret, 'bytes', { fcm_token: fcmToken() });
    await registerDevice(ctx(), ctx().secret, 'bytes', { fcm_token: fcmToken() });
    const items = [
      { target: { device_id: id }, title: 'é "q" \\ \u2028', body: 'b' },
      { target: { project_user_id: 'bytes' }, title: 't' },
      { target: { project_user_id: 'nobody' }, title: 't' },
    ];
    const schemas = {
      '/api/v1/send-push-notifications': DeviceSendResponse,
      '/api/v1/messages:send': MessagesSendResponse,
    };
    for (const [url, schema] of Object.entries(schemas)) {
      const serialize = fastJson(schema);
      for (const headers of [{}, { 'idempotency-key': `bytes-${url}` }] as Array<Record<string, string>>) {
        const res = await post(ctx(), { ...ctx().secret, ...headers }, url, { push_notifications: items });
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(res.body).toBe(serialize(res.json()));
      }
    }
  });
});
