import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import {
  configureProviders,
  fcmToken,
  pushOverrides,
  registerDevice,
  S,
  sendToDevices,
  useFakeProviders,
} from './push-helpers.js';

const fakes = useFakeProviders();

/** Google's advice as configured in production: at least a minute after a quota answer. */
const QUOTA_DELAY_MS = 60_000;

describe.each(TEST_DIALECTS)('FCM quota scopes on %s', (dialect) => {
  const ctx = useTestContext(dialect, {
    overrides: pushOverrides(fakes, {
      runtime: { retry: { baseDelayMs: 20, maxDelayMs: 200, quotaExceededDelayMs: QUOTA_DELAY_MS } },
    }),
  });

  const sendAt = (token: string) => fakes().fcm.recorder.items.find((r) => r.token === token && r.status === 200)?.at;

  it("backs off only the device over its own rate: the project's other devices are not delayed", async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const hot = fcmToken('quota-');
    const others = Array.from({ length: 20 }, () => fcmToken());
    const hotId = await registerDevice(ctx(), ctx().secret, 'hot', { fcm_token: hot });
    const ids = await Promise.all(others.map((t) => registerDevice(ctx(), ctx().secret, 'calm', { fcm_token: t })));
    await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: ids[0]! }, title: 'warm' }]);

    // Baseline: the 20 devices alone; then the same with the hot device first in the request.
    const items = ids.map((device_id) => ({ target: { device_id }, title: 'x' }));
    const t0 = Date.now();
    await sendToDevices(ctx(), ctx().secret, items);
    const baseline = Date.now() - t0;
    fakes().fcm.recorder.clear();
    const t1 = Date.now();
    const results = await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: hotId }, title: 'x' }, ...items]);
    const elapsed = Date.now() - t1;
    expect(results.slice(1).map((r) => r.status)).toEqual(Array(20).fill(S('ACCEPTED')));
    expect([results[0]!.status, results[0]!.additional_params.failure_reason]).toEqual([
      S('RATE_LIMITED'),
      'QUOTA_EXCEEDED',
    ]);
    const lastOther = Math.max(...others.map((t) => sendAt(t)!));
    const delay = lastOther - t1 - baseline;
    if (process.env.HERALD_PRINT_MEASURES)
      process.stdout.write(
        `[measure ${dialect}] 20 devices: baseline ${baseline} ms; with a QUOTA_EXCEEDED device ${elapsed} ms; last other device accepted ${lastOther - t1} ms after the request began\n`,
      );
    // A minute's backoff cannot fit the request: it answers at once instead of holding anyone.
    expect(elapsed).toBeLessThan(baseline + 2000);
    expect(delay).toBeLessThan(2000);

    // The hot device stays backed off (no request leaves for it); the others go on.
    const [again, calm] = await sendToDevices(ctx(), ctx().secret, [
      { target: { device_id: hotId }, title: 'x' },
      items[0]!,
    ]);
    expect([again!.status, again!.additional_params.failure_reason, calm!.status]).toEqual([
      S('RATE_LIMITED'),
      'DEVICE_QUOTA_BACKOFF',
      S('ACCEPTED'),
    ]);
    expect(fakes().fcm.recorder.items.filter((r) => r.token === hot)).toHaveLength(1);
  });

  it('paces a project over its quota without blocking other projects, answering at once what cannot go before the deadline', async () => {
    for (const trigger of ['projectquota-', 'doc-RATE_LIMIT_EXCEEDED-']) {
      const held = await ctx().newProject('over-quota');
      const other = await ctx().newProject('other-fcm-project');
      const { fcmProject } = await configureProviders(ctx(), held.secret, fakes());
      await configureProviders(ctx(), other.secret, fakes());
      const hot = await registerDevice(ctx(), held.secret, 'p', { fcm_token: fcmToken(trigger) });
      const mine = await registerDevice(ctx(), held.secret, 'p', { fcm_token: fcmToken() });
      const theirs = await registerDevice(ctx(), other.secret, 'q', { fcm_token: fcmToken() });
      const [first] = await sendToDevices(ctx(), held.secret, [{ target: { device_id: hot }, title: 'x' }]);
      expect(first!.status).toBe(S('RATE_LIMITED'));

      const started = Date.now();
      const [[stopped], [free]] = await Promise.all([
        sendToDevices(ctx(), held.secret, [{ target: { device_id: mine }, title: 'x' }]),
        sendToDevices(ctx(), other.secret, [{ target: { device_id: theirs }, title: 'x' }]),
      ]);
      expect([stopped!.status, stopped!.additional_params.failure_reason]).toEqual([
        S('RATE_LIMITED'),
        'PROVIDER_QUOTA_BACKOFF',
      ]);
      expect(free!.status).toBe(S('ACCEPTED'));
      expect(Date.now() - started).toBeLessThan(2000);
      expect(
        fakes().fcm.recorder.items.filter((r) => r.headers[':path'] === `/v1/projects/${fcmProject}/messages:send`),
      ).toHaveLength(1);
      // Held for at least Google's minute (no Retry-After given).
      expect(ctx().herald.push.quota.heldUntil(`push:fcm:${fcmProject}`) - Date.now()).toBeGreaterThan(
        QUOTA_DELAY_MS - 5000,
      );
    }
  });
});
