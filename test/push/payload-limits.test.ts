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
} from './push-helpers.js';

const fakes = useFakeProviders();

describe.each(TEST_DIALECTS)('payload limits on %s', (dialect) => {
  const ctx = useTestContext(dialect, {
    env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' },
    overrides: pushOverrides(fakes),
  });

  it('refuses an item no provider can carry with the spec 400, sending nothing', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const id = await registerDevice(ctx(), ctx().secret, 'big', { fcm_token: fcmToken() });
    fakes().fcm.recorder.clear();
    // 2,100 characters, 4,200 bytes: within the 4,096-character rule, over every provider's byte limit.
    const res = await post(ctx(), ctx().secret, '/api/v1/send-push-notifications', {
      push_notifications: [
        { target: { device_id: id }, title: 'ok' },
        { target: { device_id: id }, body: 'é'.repeat(2100) },
      ],
    });
    expect([res.statusCode, res.body, res.headers['x-error-reason']]).toEqual([
      400,
      'Invalid push notification parameters',
      'PAYLOAD_TOO_LARGE',
    ]);
    expect(fakes().fcm.recorder.items).toHaveLength(0);
  });

  it('sends what fits each provider and reports _PAYLOAD_TOO_LARGE for the provider it does not fit', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const sub = fakes().webpush.subscription();
    const ids = [
      await registerDevice(ctx(), ctx().secret, 'sizes', { fcm_token: fcmToken() }),
      await registerDevice(ctx(), ctx().secret, 'sizes', { apns_token: apnsToken() }),
      await registerDevice(ctx(), ctx().secret, 'sizes', { web_push_subscription: sub }),
    ];
    // About 4,030 bytes for FCM and APNs (under 4,096) but over the 3,993 bytes one Web Push record holds.
    const [result] = await sendToDevices(ctx(), ctx().secret, [
      { target: { project_user_id: 'sizes' }, title: 'x', body: 'b'.repeat(3950) },
    ]);
    const byDevice = new Map(result!.deliveries.map((d) => [d.device_id, [d.status, d.failure_reason]]));
    expect(ids.map((id) => byDevice.get(id))).toEqual([
      [S('ACCEPTED'), ''],
      [S('ACCEPTED'), ''],
      [S('PAYLOAD_TOO_LARGE'), 'PAYLOAD_TOO_LARGE'],
    ]);
    expect(fakes().webpush.recorder.items.filter((r) => sub.endpoint.endsWith(r.token))).toHaveLength(0);
    const fcmBody = fakes().fcm.recorder.items.at(-1)!.body as Record<string, unknown>;
    const { token: _token, ...content } = fcmBody;
    expect(Buffer.byteLength(JSON.stringify(content))).toBeLessThanOrEqual(4096);
  });
});
