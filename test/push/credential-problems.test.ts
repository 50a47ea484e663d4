import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { METRICS_AUTH, METRICS_ENV } from '../observability/metrics-text.js';
import {
  configureProviders,
  fcmToken,
  put,
  pushOverrides,
  registerDevice,
  S,
  sendToDevices,
  useFakeProviders,
} from './push-helpers.js';

const fakes = useFakeProviders();

describe.each(TEST_DIALECTS)('credential problems on %s', (dialect) => {
  const ctx = useTestContext(dialect, {
    env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true', ...METRICS_ENV },
    overrides: pushOverrides(fakes),
  });

  const view = async () =>
    (await ctx().inject({ method: 'GET', url: '/api/v1/push-credentials', headers: ctx().secret })).json();
  const devicesOf = async (user: string) =>
    (await ctx().inject({ method: 'GET', url: `/api/v1/users/${user}/devices`, headers: ctx().secret })).json<{
      devices: Array<{ status: string }>;
    }>().devices;

  it('leaves every device active after a wrong sender id, and records the problem on the credentials and in metrics', async () => {
    const { serviceAccount } = await configureProviders(ctx(), ctx().secret, fakes());
    const ids = await Promise.all(
      Array.from({ length: 5 }, () =>
        registerDevice(ctx(), ctx().secret, 'fleet', { fcm_token: fcmToken('mismatch-') }),
      ),
    );
    const results = await sendToDevices(ctx(), ctx().secret, [{ target: { project_user_id: 'fleet' }, title: 'x' }]);
    expect(results[0]!.deliveries.map((d) => [d.status, d.failure_reason])).toEqual(
      ids.map(() => [S('PROVIDER_AUTH_ERROR'), 'SENDER_ID_MISMATCH']),
    );
    expect((await devicesOf('fleet')).map((d) => d.status)).toEqual(ids.map(() => 'active'));
    expect((await view()).fcm.problem).toMatchObject({ reason: 'SENDER_ID_MISMATCH', deliveries: 5 });
    const metrics = (await ctx().inject({ method: 'GET', url: '/metrics', headers: METRICS_AUTH })).body;
    expect(metrics).toMatch(/herald_push_credential_problems_total\{provider="fcm",reason="SENDER_ID_MISMATCH"\} 5/);

    // The next send still tries every device (nothing was disabled); saving the credentials clears the problem.
    const again = await sendToDevices(ctx(), ctx().secret, [{ target: { project_user_id: 'fleet' }, title: 'x' }]);
    expect(again[0]!.deliveries).toHaveLength(5);
    expect(
      (await put(ctx(), ctx().secret, '/api/v1/push-credentials/fcm', { service_account: serviceAccount })).statusCode,
    ).toBe(200);
    expect((await view()).fcm.problem).toBeNull();
  });

  it('keeps Web Push and APNs devices whose failures are the credentials', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const sub = fakes().webpush.subscription(`invalid-${fcmToken()}`);
    const web = await registerDevice(ctx(), ctx().secret, 'cfg', { web_push_subscription: sub });
    const ios = await registerDevice(ctx(), ctx().secret, 'cfg', {
      apns_token: Buffer.from('mismatch-').toString('hex') + 'ab'.repeat(32),
    });
    const [w, a] = await sendToDevices(ctx(), ctx().secret, [
      { target: { device_id: web }, title: 'x' },
      { target: { device_id: ios }, title: 'x' },
    ]);
    expect([w!.status, a!.status, a!.additional_params.failure_reason]).toEqual([
      S('PROVIDER_AUTH_ERROR'),
      S('PROVIDER_AUTH_ERROR'),
      'DeviceTokenNotForTopic',
    ]);
    expect((await devicesOf('cfg')).map((d) => d.status)).toEqual(['active', 'active']);
    const v = await view();
    expect([v.webpush.problem.reason, v.apns.problem.reason]).toEqual(['VAPID_REJECTED_400', 'DeviceTokenNotForTopic']);
  });
});
