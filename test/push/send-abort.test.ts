import { describe, expect, it } from 'vitest';
import { findDevices } from '../../src/devices/devices.service.js';
import { SEND_ABORTED, sendToDevices } from '../../src/push/push-dispatch.js';
import { DeliveryStatus } from '../../src/push/push.types.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';
import {
  apnsToken,
  configureProviders,
  fcmToken,
  pushOverrides,
  registerDevice,
  useFakeProviders,
} from './push-helpers.js';

const fakes = useFakeProviders();

/**
 * A send cut short by its caller's signal (a worker's shutdown deadline): the requests at the
 * provider are cancelled at once, not waited for, and each such send ends `FAILED` `SEND_ABORTED`
 * (its outcome unknown); a send the provider had already answered keeps its answer.
 */
describe.each(TEST_DIALECTS)('sends aborted by their signal on %s', (dialect) => {
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });

  it('cancels the sends at the provider at once and reports them SEND_ABORTED, keeping answers already in', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const fast = await registerDevice(ctx(), ctx().secret, 'abort-fast', { fcm_token: fcmToken() });
    const slow = await Promise.all(
      [1, 2, 3].map((i) =>
        registerDevice(ctx(), ctx().secret, `abort-slow-${i}`, { fcm_token: fcmToken('slow-5000-') }),
      ),
    );
    // APNs (its own HTTP/2 pool partition) and Web Push (HTTP/1.1) are cut short the same way.
    const apns = await registerDevice(ctx(), ctx().secret, 'abort-apns', { apns_token: apnsToken('slow-5000-') });
    const webpush = await registerDevice(ctx(), ctx().secret, 'abort-webpush', {
      web_push_subscription: fakes().webpush.subscription(fcmToken('slow-5000-')),
    });
    const ids = [fast, ...slow, apns, webpush];
    const devices = await findDevices(ctx().database.db, ctx().project.project_id, ids);
    const sends = ids.map((id) => ({ device: devices.get(id)!, message: { title: 'Hi' } }));
    const controller = new AbortController();
    const heldBefore = fakes().fcm.delayed;
    const ended = new Set<string>();
    const sending = sendToDevices(ctx().herald.push, ctx().database.db, ctx().project.project_id, sends, {
      deadlineMs: 30_000,
      signal: controller.signal,
      onOutcome: (o) => ended.add(o.deviceId),
    });
    await waitFor(() => ended.has(fast) && fakes().fcm.delayed >= heldBefore + 3, {
      what: 'the fast send answered and the slow ones at the provider',
    });
    const abortedAt = Date.now();
    controller.abort(new Error('shutting down'));
    const outcomes = await sending;
    // Nothing waited for the 5-s answers.
    expect(Date.now() - abortedAt).toBeLessThan(2000);
    expect(outcomes[0]).toMatchObject({ deviceId: fast, status: DeliveryStatus.ACCEPTED });
    for (const [i, id] of slow.entries())
      expect(outcomes[i + 1]).toMatchObject({
        deviceId: id,
        status: DeliveryStatus.FAILED,
        failureReason: SEND_ABORTED,
        attempts: 1,
      });
    for (const [i, id] of [apns, webpush].entries())
      expect(outcomes[i + 4]).toMatchObject({
        deviceId: id,
        status: DeliveryStatus.FAILED,
        failureReason: SEND_ABORTED,
      });
  });

  it('starts nothing when the signal is already aborted', async () => {
    const id = await registerDevice(ctx(), ctx().secret, 'abort-before', { fcm_token: fcmToken() });
    const devices = await findDevices(ctx().database.db, ctx().project.project_id, [id]);
    const received = fakes().fcm.recorder.total;
    const outcomes = await sendToDevices(
      ctx().herald.push,
      ctx().database.db,
      ctx().project.project_id,
      [{ device: devices.get(id)!, message: { title: 'Hi' } }],
      { signal: AbortSignal.abort() },
    );
    expect(outcomes[0]).toMatchObject({ status: DeliveryStatus.FAILED, failureReason: SEND_ABORTED, attempts: 0 });
    expect(fakes().fcm.recorder.total).toBe(received);
  });
});
