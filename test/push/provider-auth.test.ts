import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createPushRuntime, type PushRuntime } from '../../src/push/push-runtime.js';
import { sendPushNotifications } from '../../src/push/push.service.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import {
  apnsToken,
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

/** The clock of the app's push runtime: the system clock, moved forward by `skewMs` where a test needs time to pass. */
const clock = { skewMs: 0, now: () => Date.now() + clock.skewMs };

describe.each(TEST_DIALECTS)('provider authentication on %s', (dialect) => {
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes, { runtime: { clock } }) });

  /** A second runtime on the same database whose clock the test moves. */
  async function withClock(run: (push: PushRuntime, clock: { t: number }) => Promise<void>): Promise<void> {
    const clock = { t: Date.now() };
    const push = createPushRuntime(ctx().herald.push.config, ctx().database, {
      ca: fakes().tls.caPem,
      clock: { now: () => clock.t },
    });
    try {
      await run(push, clock);
    } finally {
      await push.close();
    }
  }

  const jwtsFor = (tokens: Set<string>) =>
    new Set(
      fakes()
        .apns.recorder.items.filter((r) => tokens.has(r.token))
        .map((r) => String(r.headers.authorization)),
    );

  it('shares one OAuth token exchange among many concurrent FCM sends, and exchanges again after expiry', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const ids = await Promise.all(
      Array.from({ length: 40 }, () => registerDevice(ctx(), ctx().secret, 'many', { fcm_token: fcmToken() })),
    );
    fakes().fcm.tokenLifetimeSeconds = 1;
    fakes().fcm.now = clock.now;
    try {
      const before = fakes().fcm.exchanges;
      const results = await sendToDevices(
        ctx(),
        ctx().secret,
        ids.map((device_id) => ({ target: { device_id }, title: 'x' })),
      );
      expect(results.every((r) => r.status === S('ACCEPTED'))).toBe(true);
      expect(fakes().fcm.exchanges - before).toBe(1);
      await sendToDevices(
        ctx(),
        ctx().secret,
        ids.slice(0, 5).map((device_id) => ({ target: { device_id }, title: 'x' })),
      );
      expect(fakes().fcm.exchanges - before).toBe(1);
      // The token's second passes on both clocks, Herald's and the stand-in's, without waiting for it.
      clock.skewMs += 1100;
      const refused = () => fakes().fcm.recorder.items.filter((r) => r.status === 401).length;
      const refusedBefore = refused();
      const later = await sendToDevices(
        ctx(),
        ctx().secret,
        ids.map((device_id) => ({ target: { device_id }, title: 'x' })),
      );
      expect(later.every((r) => r.status === S('ACCEPTED'))).toBe(true);
      expect(fakes().fcm.exchanges - before).toBe(2);
      // Herald knew the token had expired: it exchanged before sending, not after a refusal.
      expect(refused()).toBe(refusedBefore);
    } finally {
      fakes().fcm.tokenLifetimeSeconds = 3600;
      fakes().fcm.now = () => Date.now();
      clock.skewMs = 0;
    }
  });

  it('exchanges again once when FCM refuses a cached access token (401), then delivers', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const id = await registerDevice(ctx(), ctx().secret, 'stale', { fcm_token: fcmToken() });
    await withClock(async (push) => {
      fakes().fcm.tokenLifetimeSeconds = 1;
      try {
        const send = () =>
          sendPushNotifications(
            push,
            ctx().herald.db,
            ctx().project.project_id,
            [{ target: { device_id: id }, title: 'x' }],
            { variant: 'device' },
          );
        expect((await send())[0]!.status).toBe(S('ACCEPTED'));
        fakes().fcm.now = () => Date.now() + 1100;
        // The runtime's clock stood still, so it still trusts its token; the stand-in's moved past it.
        const before = fakes().fcm.exchanges;
        expect((await send())[0]!.status).toBe(S('ACCEPTED'));
        expect(fakes().fcm.exchanges - before).toBe(1);
      } finally {
        fakes().fcm.tokenLifetimeSeconds = 3600;
        fakes().fcm.now = () => Date.now();
      }
    });
  });

  it('reports a service account the token endpoint refuses as a provider auth error, without retrying', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const rogue = {
      ...fakes().fcm.serviceAccount('rogue'),
      private_key: crypto
        .generateKeyPairSync('rsa', { modulusLength: 2048 })
        .privateKey.export({ type: 'pkcs8', format: 'pem' })
        .toString(),
    };
    expect(
      (await put(ctx(), ctx().secret, '/api/v1/push-credentials/fcm', { service_account: rogue })).statusCode,
    ).toBe(200);
    const id = await registerDevice(ctx(), ctx().secret, 'rogue', { fcm_token: fcmToken() });
    const before = ctx().herald.push.fcmAuth.exchanges;
    const [result] = await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: id }, title: 'x' }]);
    expect([result!.status, result!.additional_params.failure_reason]).toEqual([
      S('PROVIDER_AUTH_ERROR'),
      'OAUTH_INVALID_GRANT',
    ]);
    expect(ctx().herald.push.fcmAuth.exchanges - before).toBe(1);
  });

  it('reuses one APNs provider token per key, refreshes it once after ExpiredProviderToken, never within 20 minutes', async () => {
    const { apnsKey, topic } = await configureProviders(ctx(), ctx().secret, fakes());
    const tokens = Array.from({ length: 20 }, () => apnsToken());
    const ids = await Promise.all(tokens.map((t) => registerDevice(ctx(), ctx().secret, 'ios', { apns_token: t })));
    await withClock(async (push, clock) => {
      fakes().apns.now = () => clock.t;
      try {
        const send = () =>
          sendPushNotifications(
            push,
            ctx().herald.db,
            ctx().project.project_id,
            ids.map((device_id) => ({ target: { device_id }, title: 'x' })),
            { variant: 'device' },
          );
        expect((await send()).every((r) => r.status === S('ACCEPTED'))).toBe(true);
        expect(jwtsFor(new Set(tokens)).size).toBe(1);

        // Saving the same key again (a new fingerprint) mints nothing: the token belongs to the key.
        const again = await put(ctx(), ctx().secret, '/api/v1/push-credentials/apns', {
          key: apnsKey.privateKey,
          key_id: apnsKey.keyId,
          team_id: apnsKey.teamId,
          topic,
        });
        expect(again.statusCode).toBe(200);
        push.forgetCredentials(ctx().project.project_id);
        expect((await send()).every((r) => r.status === S('ACCEPTED'))).toBe(true);
        expect(push.apnsAuth.issued).toBe(1);

        // Apple calls the token expired 5 minutes in: a new one now would earn TooManyProviderTokenUpdates, so none is signed.
        clock.t += 5 * 60_000;
        fakes().apns.expireSeenTokens();
        const early = await send();
        expect(early.map((r) => [r.status, r.additional_params.failure_reason])).toEqual(
          ids.map(() => [S('PROVIDER_AUTH_ERROR'), 'ExpiredProviderToken']),
        );
        expect(push.apnsAuth.issued).toBe(1);

        // 21 minutes after signing: 20 concurrent sends refresh it once, then deliver.
        clock.t += 16 * 60_000;
        const late = await send();
        expect(late.every((r) => r.status === S('ACCEPTED'))).toBe(true);
        expect(push.apnsAuth.issued).toBe(2);
        expect(jwtsFor(new Set(tokens)).size).toBe(2);
      } finally {
        fakes().apns.now = () => Date.now();
      }
    });
  });

  it('keeps an APNs provider token for 40 minutes, then signs a new one', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const token = apnsToken();
    const id = await registerDevice(ctx(), ctx().secret, 'clock', { apns_token: token });
    await withClock(async (push, clock) => {
      fakes().apns.now = () => clock.t;
      const send = async () => {
        const [r] = await sendPushNotifications(
          push,
          ctx().herald.db,
          ctx().project.project_id,
          [{ target: { device_id: id }, title: 'x' }],
          { variant: 'device' },
        );
        expect(r!.status).toBe(S('ACCEPTED'));
      };
      await send();
      clock.t += 30 * 60_000;
      await send();
      expect(jwtsFor(new Set([token])).size).toBe(1);
      clock.t += 11 * 60_000;
      await send();
      expect(jwtsFor(new Set([token])).size).toBe(2);
      expect(push.apnsAuth.issued).toBe(2);
      fakes().apns.now = () => Date.now();
    });
  });
});
