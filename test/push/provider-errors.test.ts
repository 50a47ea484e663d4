import { describe, expect, it } from 'vitest';
import { sendPushNotifications } from '../../src/push/push.service.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';
import {
  apnsToken,
  configureProviders,
  fcmToken,
  pushOverrides,
  registerDevice,
  S,
  sendToDevices,
  useFakeProviders,
  type DeviceAddress,
} from './push-helpers.js';

// Web Push subscriptions registered here point at the stand-in on loopback.
const LOOPBACK_WEB_PUSH = { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' };

const fakes = useFakeProviders();
const MAX_ATTEMPTS = 3;

type Fate = 'removed' | 'disabled' | 'active';
interface Case {
  provider: 'fcm' | 'apns' | 'webpush';
  prefix: string;
  status: string;
  reason: string;
  fate: Fate;
  /** Requests the stand-in sees. */
  attempts: number;
}

const cases: Case[] = [
  {
    provider: 'fcm',
    prefix: 'unregistered-',
    status: 'TOKEN_UNREGISTERED',
    reason: 'UNREGISTERED',
    fate: 'removed',
    attempts: 1,
  },
  {
    provider: 'fcm',
    prefix: 'invalid-',
    status: 'TOKEN_INVALID',
    reason: 'INVALID_ARGUMENT',
    fate: 'disabled',
    attempts: 1,
  },
  {
    provider: 'fcm',
    prefix: 'payload-',
    status: 'PAYLOAD_TOO_LARGE',
    reason: 'INVALID_ARGUMENT',
    fate: 'active',
    attempts: 1,
  },
  {
    provider: 'fcm',
    prefix: 'mismatch-',
    status: 'PROVIDER_AUTH_ERROR',
    reason: 'SENDER_ID_MISMATCH',
    fate: 'active',
    attempts: 1,
  },
  {
    provider: 'fcm',
    prefix: 'auth-',
    status: 'PROVIDER_AUTH_ERROR',
    reason: 'THIRD_PARTY_AUTH_ERROR',
    fate: 'active',
    attempts: 1,
  },
  {
    provider: 'fcm',
    prefix: 'forbidden-',
    status: 'PROVIDER_AUTH_ERROR',
    reason: 'PERMISSION_DENIED',
    fate: 'active',
    attempts: 1,
  },
  {
    provider: 'fcm',
    prefix: 'quota-',
    status: 'RATE_LIMITED',
    reason: 'QUOTA_EXCEEDED',
    fate: 'active',
    attempts: MAX_ATTEMPTS,
  },
  {
    provider: 'fcm',
    prefix: 'unavailable-',
    status: 'FAILED',
    reason: 'UNAVAILABLE',
    fate: 'active',
    attempts: MAX_ATTEMPTS,
  },
  {
    provider: 'fcm',
    prefix: 'internal-',
    status: 'FAILED',
    reason: 'INTERNAL',
    fate: 'active',
    attempts: MAX_ATTEMPTS,
  },
  {
    provider: 'fcm',
    prefix: 'reset-',
    status: 'FAILED',
    reason: 'STREAM_RESET',
    fate: 'active',
    attempts: MAX_ATTEMPTS,
  },
  {
    provider: 'apns',
    prefix: 'unregistered-',
    status: 'TOKEN_UNREGISTERED',
    reason: 'Unregistered',
    fate: 'removed',
    attempts: 1,
  },
  // BadDeviceToken in both environments (the second request asks the other one): the token itself is bad.
  {
    provider: 'apns',
    prefix: 'invalid-',
    status: 'TOKEN_INVALID',
    reason: 'BadDeviceToken',
    fate: 'disabled',
    attempts: 2,
  },
  {
    provider: 'apns',
    prefix: 'mismatch-',
    status: 'PROVIDER_AUTH_ERROR',
    reason: 'DeviceTokenNotForTopic',
    fate: 'active',
    attempts: 1,
  },
  {
    provider: 'apns',
    prefix: 'payload-',
    status: 'PAYLOAD_TOO_LARGE',
    reason: 'PayloadTooLarge',
    fate: 'active',
    attempts: 1,
  },
  {
    provider: 'apns',
    prefix: 'auth-',
    status: 'PROVIDER_AUTH_ERROR',
    reason: 'InvalidProviderToken',
    fate: 'active',
    attempts: 1,
  },
  {
    provider: 'apns',
    prefix: 'forbidden-',
    status: 'PROVIDER_AUTH_ERROR',
    reason: 'Forbidden',
    fate: 'active',
    attempts: 1,
  },
  {
    provider: 'apns',
    prefix: 'quota-',
    status: 'RATE_LIMITED',
    reason: 'TooManyRequests',
    fate: 'active',
    attempts: MAX_ATTEMPTS,
  },
  {
    provider: 'apns',
    prefix: 'unavailable-',
    status: 'FAILED',
    reason: 'ServiceUnavailable',
    fate: 'active',
    attempts: MAX_ATTEMPTS,
  },
  {
    provider: 'apns',
    prefix: 'internal-',
    status: 'FAILED',
    reason: 'InternalServerError',
    fate: 'active',
    attempts: MAX_ATTEMPTS,
  },
  {
    provider: 'webpush',
    prefix: 'unregistered-',
    status: 'TOKEN_UNREGISTERED',
    reason: 'HTTP_410',
    fate: 'removed',
    attempts: 1,
  },
  {
    provider: 'webpush',
    prefix: 'ghost-',
    status: 'TOKEN_UNREGISTERED',
    reason: 'HTTP_404',
    fate: 'removed',
    attempts: 1,
  },
  {
    provider: 'webpush',
    prefix: 'invalid-',
    status: 'PROVIDER_AUTH_ERROR',
    reason: 'HTTP_400',
    fate: 'active',
    attempts: 1,
  },
  {
    provider: 'webpush',
    prefix: 'payload-',
    status: 'PAYLOAD_TOO_LARGE',
    reason: 'HTTP_413',
    fate: 'active',
    attempts: 1,
  },
  {
    provider: 'webpush',
    prefix: 'auth-',
    status: 'PROVIDER_AUTH_ERROR',
    reason: 'HTTP_403',
    fate: 'active',
    attempts: 1,
  },
  {
    provider: 'webpush',
    prefix: 'quota-',
    status: 'RATE_LIMITED',
    reason: 'HTTP_429',
    fate: 'active',
    attempts: MAX_ATTEMPTS,
  },
  {
    provider: 'webpush',
    prefix: 'unavailable-',
    status: 'FAILED',
    reason: 'HTTP_503',
    fate: 'active',
    attempts: MAX_ATTEMPTS,
  },
  {
    provider: 'webpush',
    prefix: 'internal-',
    status: 'FAILED',
    reason: 'HTTP_500',
    fate: 'active',
    attempts: MAX_ATTEMPTS,
  },
];

describe.each(TEST_DIALECTS)('provider errors on %s', (dialect) => {
  const ctx = useTestContext(dialect, {
    env: LOOPBACK_WEB_PUSH,
    overrides: pushOverrides(fakes, {
      runtime: { retry: { maxAttempts: MAX_ATTEMPTS, baseDelayMs: 20, maxDelayMs: 100, quotaExceededDelayMs: 50 } },
    }),
  });

  /** A device whose address selects the stand-in's fault; returns its id and the address the stand-in sees. */
  async function deviceFor(
    c: TestContext,
    user: string,
    provider: Case['provider'],
    prefix: string,
  ): Promise<{ id: string; seenAs: string }> {
    let address: DeviceAddress;
    let seenAs: string;
    if (provider === 'fcm') address = { fcm_token: (seenAs = fcmToken(prefix)) };
    else if (provider === 'apns') address = { apns_token: (seenAs = apnsToken(prefix)) };
    else if (prefix === 'ghost-') {
      seenAs = `ghost-${fcmToken()}`;
      address = {
        web_push_subscription: { ...fakes().webpush.subscription(), endpoint: `${fakes().webpush.url}/push/${seenAs}` },
      };
    } else {
      const sub = fakes().webpush.subscription(fcmToken(prefix));
      seenAs = sub.endpoint.slice(sub.endpoint.lastIndexOf('/') + 1);
      address = { web_push_subscription: sub };
    }
    return { id: await registerDevice(c, c.secret, user, address), seenAs };
  }

  async function devicesOf(user: string): Promise<Map<string, string>> {
    const res = await ctx().inject({ method: 'GET', url: `/api/v1/users/${user}/devices`, headers: ctx().secret });
    const body = res.json<
      { devices?: Array<{ device_id: string; status: string }> } | Array<{ device_id: string; status: string }>
    >();
    const list = Array.isArray(body) ? body : (body.devices ?? []);
    return new Map(list.map((d) => [d.device_id, d.status]));
  }

  it('maps every provider error to its status, raw reason and token action, all providers in one request', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const devices = await Promise.all(cases.map((c) => deviceFor(ctx(), 'errors', c.provider, c.prefix)));
    const results = await sendToDevices(
      ctx(),
      ctx().secret,
      devices.map((d) => ({ target: { device_id: d.id }, title: 'x' })),
    );
    const left = await devicesOf('errors');
    cases.forEach((c, i) => {
      const label = `${c.provider} ${c.prefix}`;
      expect([label, results[i]!.status, results[i]!.additional_params.failure_reason]).toEqual([
        label,
        S(c.status),
        c.reason,
      ]);
      const fate = left.has(devices[i]!.id)
        ? left.get(devices[i]!.id) === 'disabled'
          ? 'disabled'
          : 'active'
        : 'removed';
      expect([label, fate]).toEqual([label, c.fate]);
      const seen = [fakes().fcm, fakes().apns, fakes().webpush]
        .flatMap((f) => f.recorder.items)
        .filter((r) => r.token === devices[i]!.seenAs);
      expect([label, seen.length]).toEqual([label, c.attempts]);
    });
  });

  it('retries 5xx, 429 and resets and then succeeds, honouring Retry-After', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const prefixes = ['unavailable-2-', 'internal-1-', 'reset-1-', 'quota-1-'];
    const devices = await Promise.all(prefixes.map((p) => deviceFor(ctx(), 'retry', 'fcm', p)));
    devices.push(
      await deviceFor(ctx(), 'retry', 'apns', 'unavailable-2-'),
      await deviceFor(ctx(), 'retry', 'webpush', 'quota-1-'),
    );
    const results = await sendToDevices(
      ctx(),
      ctx().secret,
      devices.map((d) => ({ target: { device_id: d.id }, body: 'again' })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(6).fill(S('ACCEPTED')));
    const attempts = await Promise.all(
      results.map(
        async (r) =>
          (await ctx().inject({ method: 'GET', url: `/api/v1/messages/${r.message_id}`, headers: ctx().secret })).json()
            .attempts,
      ),
    );
    expect(attempts).toEqual([3, 2, 2, 2, 3, 2]);
    for (const index of [3, 5]) {
      const seen = [...fakes().fcm.recorder.items, ...fakes().webpush.recorder.items].filter(
        (r) => r.token === devices[index]!.seenAs,
      );
      expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(990);
    }
  });

  it('never sends again to a token that was just pruned', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const device = await deviceFor(ctx(), 'pruned', 'fcm', 'unregistered-');
    const [first] = await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: device.id }, title: 'x' }]);
    expect(first!.status).toBe(S('TOKEN_UNREGISTERED'));
    const [again, byUser] = await sendToDevices(ctx(), ctx().secret, [
      { target: { device_id: device.id }, title: 'x' },
      { target: { project_user_id: 'pruned' }, title: 'x' },
    ]);
    expect([again!.status, again!.additional_params.failure_reason]).toEqual([S('NO_DEVICE'), 'DEVICE_NOT_FOUND']);
    expect([byUser!.status, byUser!.additional_params.failure_reason]).toEqual([S('NO_DEVICE'), 'NO_ACTIVE_DEVICE']);
    expect(fakes().fcm.recorder.items.filter((r) => r.token === device.seenAs)).toHaveLength(1);
  });

  it('keeps an APNs token registered again after the time APNs reports it unregistered', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const device = await deviceFor(ctx(), 'apns-again', 'apns', 'unregistered-');
    fakes().apns.unregisteredAt = Date.now() - 86_400_000;
    try {
      const [result] = await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: device.id }, title: 'x' }]);
      expect([result!.status, result!.additional_params.failure_reason]).toEqual([
        S('TOKEN_UNREGISTERED'),
        'Unregistered',
      ]);
      expect((await devicesOf('apns-again')).get(device.id)).toBe('active');
    } finally {
      fakes().apns.unregisteredAt = undefined;
    }
  });

  it('skips a disabled device and reconnects after GOAWAY', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const invalid = await deviceFor(ctx(), 'skip', 'apns', 'invalid-');
    await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: invalid.id }, title: 'x' }]);
    const [skipped] = await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: invalid.id }, title: 'x' }]);
    expect([skipped!.status, skipped!.additional_params.failure_reason]).toEqual([S('SKIPPED'), 'DEVICE_DISABLED']);

    const goaway = await deviceFor(ctx(), 'skip', 'fcm', 'goaway-');
    const plain = await deviceFor(ctx(), 'skip', 'fcm', '');
    await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: plain.id }, title: 'warm' }]);
    const pool = ctx().herald.push.pool;
    const fcmOrigin = new URL(fakes().fcm.url).origin;
    const before = pool.connects;
    const liveBefore = pool.connectionsByKey().get(fcmOrigin) ?? 0;
    const [a] = await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: goaway.id }, title: 'x' }]);
    // The GOAWAY follows the answer: wait until the pool has seen it and retired that connection.
    await waitFor(() => (pool.connectionsByKey().get(fcmOrigin) ?? 0) < liveBefore, {
      what: 'the pool to retire the connection that got GOAWAY',
    });
    const [b] = await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: plain.id }, title: 'x' }]);
    expect([a!.status, b!.status]).toEqual([S('ACCEPTED'), S('ACCEPTED')]);
    expect(pool.connects).toBe(before + 1);
  });

  it('gives up at the deadline and says so (timeouts are failures, not hidden)', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const slow = await deviceFor(ctx(), 'slow', 'fcm', 'slow-2500-');
    const started = Date.now();
    const [result] = await sendPushNotifications(
      ctx().herald.push,
      ctx().herald.db,
      ctx().project.project_id,
      [{ target: { device_id: slow.id }, title: 'x' }],
      { variant: 'device', deadlineMs: 1500 },
    );
    expect(Date.now() - started).toBeLessThan(2400);
    expect([result!.status, result!.additional_params.failure_reason]).toEqual([S('FAILED'), 'TIMEOUT']);
  });
});
