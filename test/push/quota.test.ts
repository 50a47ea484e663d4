import { afterAll, describe, expect, it } from 'vitest';
import type { Received } from '../../src/fake-providers/fake-common.js';
import { sendPushNotifications } from '../../src/push/push.service.js';
import { createTokenBucketStore } from '../../src/rate-limit/create-bucket-store.js';
import type { TokenBucketStore } from '../../src/rate-limit/token-buckets.js';
import { waitFor } from '../helpers/wait-for.js';
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
const BUCKET = { capacity: 5, refillPerSecond: 10 };

/** Most sends seen in any window of `ms` milliseconds. */
function peakInWindow(received: Received[], ms: number): number {
  const times = received.map((r) => r.at).sort((a, b) => a - b);
  let peak = 0;
  for (let i = 0, j = 0; j < times.length; j++) {
    while (times[j]! - times[i]! >= ms) i++;
    peak = Math.max(peak, j - i + 1);
  }
  return peak;
}

describe.each(TEST_DIALECTS)('provider quota on %s', (dialect) => {
  // The store the runtime would make for this database, held here so the test can see a bucket's
  // level and which buckets the runtime used.
  let bucketStore: TokenBucketStore | undefined;
  const used = new Set<string>();
  const ctx = useTestContext(dialect, {
    overrides: (database) => {
      const store = createTokenBucketStore({ redisUrl: undefined }, database);
      bucketStore = store;
      const recording: TokenBucketStore = {
        take: (key, spec, cost) => (used.add(key), store.take(key, spec, cost)),
        close: () => store.close(),
      };
      return pushOverrides(fakes, { runtime: { quotas: { fcm: BUCKET, apns: BUCKET }, bucketStore: recording } })(
        database,
      );
    },
  });
  afterAll(async () => {
    await bucketStore?.close();
  });
  /** True once the bucket of `fcmProject` is full (a take of nothing changes no bucket). */
  const bucketFull = async (fcmProject: string) =>
    (await bucketStore!.take(`push:fcm:${fcmProject}`, BUCKET, 0)).resetMs === 0;

  it('holds an FCM project to its bucket, shared by every Herald project sending through it', async () => {
    const other = await ctx().newProject('same-firebase-app');
    const fcmProject = `quota-${dialect}`;
    await configureProviders(ctx(), ctx().secret, fakes(), fcmProject);
    await configureProviders(ctx(), other.secret, fakes(), fcmProject);
    const tokens = Array.from({ length: 30 }, () => fcmToken());
    const mine = await Promise.all(
      tokens.slice(0, 15).map((t) => registerDevice(ctx(), ctx().secret, 'q', { fcm_token: t })),
    );
    const theirs = await Promise.all(
      tokens.slice(15).map((t) => registerDevice(ctx(), other.secret, 'q', { fcm_token: t })),
    );

    // Warm up (OAuth exchanges, connections) so arrival times reflect the bucket alone, then let it refill.
    await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: mine[0]! }, title: 'warm' }]);
    await sendToDevices(ctx(), other.secret, [{ target: { device_id: theirs[0]! }, title: 'warm' }]);
    expect(used).toContain(`push:fcm:${fcmProject}`);
    await waitFor(() => bucketFull(fcmProject), { what: 'the quota bucket to refill' });
    fakes().fcm.recorder.clear();
    const [a, b] = await Promise.all([
      sendToDevices(
        ctx(),
        ctx().secret,
        mine.map((device_id) => ({ target: { device_id }, title: 'q' })),
      ),
      sendToDevices(
        ctx(),
        other.secret,
        theirs.map((device_id) => ({ target: { device_id }, title: 'q' })),
      ),
    ]);
    expect([...a, ...b].every((r) => r.status === S('ACCEPTED'))).toBe(true);
    const received = fakes().fcm.recorder.items.filter((r) => tokens.includes(r.token));
    expect(received).toHaveLength(30);
    // 5 at once, then 10 per second: 30 sends take at least 2.5 s, and no second holds more than 5 + 10.
    const times = received.map((r) => r.at);
    expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual(2000);
    expect(peakInWindow(received, 1000)).toBeLessThanOrEqual(BUCKET.capacity + BUCKET.refillPerSecond + 1);
  });

  it('waits for tokens only until the deadline, then reports the rest as rate limited', async () => {
    await configureProviders(ctx(), ctx().secret, fakes(), `quota-deadline-${dialect}`);
    const tokens = Array.from({ length: 20 }, () => fcmToken());
    const ids = await Promise.all(tokens.map((t) => registerDevice(ctx(), ctx().secret, 'late', { fcm_token: t })));
    // A 1.6 s deadline less the 1 s margin leaves 0.6 s: 5 at once plus about 6 refilled; the rest wait in vain.
    const results = await sendPushNotifications(
      ctx().herald.push,
      ctx().herald.db,
      ctx().project.project_id,
      ids.map((device_id) => ({ target: { device_id }, title: 'x' })),
      { variant: 'device', deadlineMs: 1600 },
    );
    const accepted = results.filter((r) => r.status === S('ACCEPTED')).length;
    const limited = results.filter((r) => r.status === S('RATE_LIMITED'));
    expect(accepted).toBeGreaterThanOrEqual(5);
    expect(accepted).toBeLessThanOrEqual(5 + 6 + 1);
    expect(limited.length).toBe(20 - accepted);
    expect(limited.every((r) => r.additional_params.failure_reason === 'QUOTA_WAIT_TIMEOUT')).toBe(true);
    expect(fakes().fcm.recorder.items.filter((r) => tokens.includes(r.token))).toHaveLength(accepted);
  });
});
