import pino from 'pino';
import { SignJWT } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createSecretBox } from '../../src/crypto/secret-box.js';
import {
  disableIdentityVerification,
  enableIdentityVerification,
  userTokenFor,
} from '../../src/identity/identity.service.js';
import { findDevice } from '../../src/devices/devices.service.js';
import { systemClock } from '../../src/lib/clock.js';
import { createRateLimiter } from '../../src/rate-limit/create-rate-limiter.js';
import type { RateLimiter } from '../../src/rate-limit/rate-limiter.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { runHerald } from '../rate-limit/herald-cli.js';
import { manualClock } from '../helpers/clock.js';

const SECRET_KEY = 'ab'.repeat(32);
/** Tiny buckets so a test spends one in a few requests; `client` is the public key's own class. */
const env = { RATE_LIMIT_DEFAULTS: 'management=1/2,client=1/3', HERALD_SECRET_KEY: SECRET_KEY };
const silent = pino({ level: 'silent' });
const json = { 'content-type': 'application/json' };

describe.each(TEST_DIALECTS)('the public key on %s', (dialect) => {
  const clock = manualClock();
  let limiter: RateLimiter | undefined;
  const ctx = useTestContext(dialect, {
    env,
    overrides: (database) => {
      limiter = createRateLimiter(loadConfig(env), database, { clock, logger: silent });
      return { rateLimiter: limiter };
    },
  });
  afterAll(async () => {
    await limiter?.close();
  });

  // Every call but the bucket test's waits 5 s on the manual clock first, so the tiny buckets are full.
  let refill = true;
  const call: ReturnType<typeof ctx>['inject'] = (options) => {
    if (refill) clock.advance(5000);
    return ctx().inject(options);
  };
  const post = (url: string, headers: Record<string, string>, body: unknown) =>
    call({ method: 'POST', url, headers: { ...headers, ...json }, payload: JSON.stringify(body) });
  const register = (headers: Record<string, string>, body: Record<string, unknown>) =>
    post('/api/v1/devices', headers, { platform: 'android', ...body });
  const track = (headers: Record<string, string>, body: unknown) => post('/api/v1/events', headers, body);

  it('cannot read or manage users, devices, events, campaigns or sends', async () => {
    const { public: pub, secret } = await ctx().newProject('reads');
    expect((await post('/api/v1/users', secret, { project_user_id: 'alice' })).statusCode).toBe(200);
    const reads = [
      { method: 'GET' as const, url: '/api/v1/push-credentials' },
      { method: 'GET' as const, url: '/api/v1/messages/m1' },
      { method: 'GET' as const, url: '/api/v1/users/alice/devices' },
      { method: 'GET' as const, url: '/api/v1/users/alice/events' },
      { method: 'GET' as const, url: '/api/v1/campaigns' },
      { method: 'POST' as const, url: '/api/v1/users', payload: JSON.stringify({ project_user_id: 'x' }) },
      {
        method: 'POST' as const,
        url: '/api/v1/messages:send',
        payload: JSON.stringify({ targets: [{ project_user_id: 'alice' }], title: 't', body: 'b' }),
      },
      { method: 'DELETE' as const, url: '/api/v1/users/alice' },
      { method: 'PATCH' as const, url: '/api/v1/users/alice', payload: JSON.stringify({ properties: { a: 1 } }) },
    ];
    for (const r of reads) {
      const res = await call({ ...r, headers: { ...pub, ...json } });
      expect(res.statusCode, `${r.method} ${r.url}`).toBe(401);
      expect(res.body).not.toContain('alice');
    }
  });

  it('registers devices and tracks events for client apps', async () => {
    const { public: pub } = await ctx().newProject('client');
    const device = await register(pub, { project_user_id: 'bob', fcm_token: 'tok-bob-1', device_id: 'dev-bob' });
    expect(device.statusCode).toBe(200);
    expect(device.json()).toMatchObject({ device_id: 'dev-bob', project_user_id: 'bob' });
    // Refreshing one's own device is fine.
    expect(
      (await register(pub, { project_user_id: 'bob', fcm_token: 'tok-bob-2', device_id: 'dev-bob' })).statusCode,
    ).toBe(200);
    expect((await track(pub, { project_user_id: 'bob', name: 'opened' })).statusCode).toBe(200);
  });

  it("cannot move another user's device id, but a push token still moves (rule `devices`); the secret key can move both", async () => {
    const { public: pub, secret } = await ctx().newProject('takeover');
    expect(
      (await register(pub, { project_user_id: 'victim', fcm_token: 'tok-victim', device_id: 'dev-victim' })).statusCode,
    ).toBe(200);

    const taken = await register(pub, {
      project_user_id: 'attacker',
      fcm_token: 'tok-attacker',
      device_id: 'dev-victim',
    });
    expect(taken.statusCode).toBe(409);
    expect(taken.headers['x-error-reason']).toBe('DEVICE_OWNED_BY_ANOTHER_USER');
    expect(taken.json()).toEqual({ error: expect.stringMatching(/another user/) });
    const listed = await call({ method: 'GET', url: '/api/v1/users/victim/devices', headers: secret });
    expect(listed.json().devices).toEqual([
      expect.objectContaining({ device_id: 'dev-victim', project_user_id: 'victim' }),
    ]);
    expect((await call({ method: 'GET', url: '/api/v1/users/attacker/devices', headers: secret })).statusCode).toBe(
      404,
    );

    // The device itself (it sends its current token with its id) may change hands, as after a logout.
    const sameDevice = await register(pub, {
      project_user_id: 'next-user',
      fcm_token: 'tok-victim',
      device_id: 'dev-victim',
    });
    expect(sameDevice.statusCode).toBe(200);
    expect(sameDevice.json()).toMatchObject({ device_id: 'dev-victim', project_user_id: 'next-user' });

    // Only the device knows its token: the same token registered for a new user moves to that user.
    const moved = await register(pub, { project_user_id: 'new-owner', fcm_token: 'tok-victim', device_id: 'dev-new' });
    expect(moved.statusCode).toBe(200);
    expect(
      (await call({ method: 'GET', url: '/api/v1/users/next-user/devices', headers: secret })).json().devices,
    ).toEqual([]);

    const bySecret = await register(secret, { project_user_id: 'other', fcm_token: 'tok-x', device_id: 'dev-new' });
    expect(bySecret.statusCode).toBe(200);
    expect(bySecret.json()).toMatchObject({ device_id: 'dev-new', project_user_id: 'other' });
  });

  it("spends the client bucket, never the secret key's management bucket", async () => {
    const { public: pub, secret } = await ctx().newProject('buckets');
    refill = false;
    const clientCalls = [];
    for (let i = 0; i < 4; i++) clientCalls.push(await track(pub, { project_user_id: 'carol', name: `e${i}` }));
    expect(clientCalls.map((r) => r.statusCode)).toEqual([200, 200, 200, 429]);
    expect(clientCalls[0]!.headers['ratelimit-limit']).toBe('3');
    // The secret key's bucket is untouched: both of its tokens are there, even on the client routes.
    const management = [
      await post('/api/v1/users', secret, { project_user_id: 'm1' }),
      await track(secret, { project_user_id: 'carol', name: 's' }),
    ];
    expect(management.map((r) => r.statusCode)).toEqual([200, 200]);
    expect(management.map((r) => r.headers['ratelimit-limit'])).toEqual(['2', '2']);
    expect((await post('/api/v1/users', secret, { project_user_id: 'm2' })).statusCode).toBe(429);
    // ...and spending it did not touch the client bucket either.
    clock.advance(1000);
    expect((await track(pub, { project_user_id: 'carol', name: 'later' })).statusCode).toBe(200);
    refill = true;
  });

  describe('identity verification', () => {
    const box = createSecretBox(Buffer.from(SECRET_KEY, 'hex'));

    it('is off by default: public-key calls need no user token', async () => {
      const { public: pub } = await ctx().newProject('off');
      expect((await track(pub, { project_user_id: 'dave', name: 'x' })).statusCode).toBe(200);
    });

    it('when on, public-key calls need a valid HMAC or JWT user token (401 JSON otherwise); secret-key calls do not', async () => {
      const { project, public: pub, secret } = await ctx().newProject('on');
      // Read (and cached, on SQLite) as off first: turning it on must apply from the next request.
      expect((await track(pub, { project_user_id: 'erin', name: 'x' })).statusCode).toBe(200);
      const { signingKey } = await enableIdentityVerification(ctx().database.db, box, systemClock, project.project_id);
      const hmac = userTokenFor(signingKey, 'erin');
      const jwt = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject('erin')
        .setExpirationTime('5m')
        .sign(new TextEncoder().encode(signingKey));
      const wrongJwt = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject('erin')
        .sign(new TextEncoder().encode('not-the-key'));
      const withToken = (token: string) => ({ ...pub, 'x-service-user-token': token });

      for (const res of [
        await track(pub, { project_user_id: 'erin', name: 'x' }),
        await track(withToken(userTokenFor(signingKey, 'mallory')), { project_user_id: 'erin', name: 'x' }),
        await track(withToken(wrongJwt), { project_user_id: 'erin', name: 'x' }),
        await track(withToken('garbage'), { project_user_id: 'erin', name: 'x' }),
        await register(pub, { project_user_id: 'erin', fcm_token: 'tok-erin' }),
        await track(withToken(hmac), {
          events: [
            { project_user_id: 'erin', name: 'a' },
            { project_user_id: 'frank', name: 'b' },
          ],
        }),
      ]) {
        expect(res.statusCode).toBe(401);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expect(res.headers['x-error-reason']).toBe('IDENTITY_VERIFICATION_FAILED');
        expect(res.json()).toEqual({ error: expect.any(String) });
      }
      expect((await track(withToken(hmac), { project_user_id: 'erin', name: 'x' })).statusCode).toBe(200);
      expect(
        (await track(withToken(hmac.toUpperCase()), { events: [{ project_user_id: 'erin', name: 'a' }] })).statusCode,
      ).toBe(200);
      expect((await register(withToken(jwt), { project_user_id: 'erin', fcm_token: 'tok-erin' })).statusCode).toBe(200);
      expect((await track(secret, { project_user_id: 'anyone', name: 'x' })).statusCode).toBe(200);

      await disableIdentityVerification(ctx().database.db, project.project_id);
      expect((await track(pub, { project_user_id: 'erin', name: 'x' })).statusCode).toBe(200);
    });

    it("off: the public key re-points a user's device to a new token by naming the user and the device id, and adds devices to any user; on: neither without that user's token", async () => {
      const { project, public: pub, secret } = await ctx().newProject('repoint');
      const projectId = project.project_id;
      const tokenOf = async (deviceId: string) =>
        (await findDevice(ctx().database.db, projectId, deviceId))?.pushAddress;
      const devicesOfGina = async () =>
        (await call({ method: 'GET', url: '/api/v1/users/gina/devices', headers: secret }))
          .json()
          .devices.map((d: { device_id: string }) => d.device_id)
          .sort();
      expect(
        (await register(pub, { project_user_id: 'gina', fcm_token: 'tok-phone', device_id: 'gina-phone' })).statusCode,
      ).toBe(200);

      // Off (the default): a token refresh for gina's device, sent by whoever knows both ids, is taken.
      const repointed = await register(pub, {
        project_user_id: 'gina',
        fcm_token: 'tok-mallory',
        device_id: 'gina-phone',
      });
      expect(repointed.statusCode).toBe(200);
      expect(repointed.json()).toMatchObject({ device_id: 'gina-phone', project_user_id: 'gina' });
      expect(await tokenOf('gina-phone')).toBe('tok-mallory');
      // ...and so is a new device for gina, knowing only her id.
      const added = await register(pub, {
        project_user_id: 'gina',
        fcm_token: 'tok-mallory-2',
        device_id: 'mallory-2',
      });
      expect(added.statusCode).toBe(200);
      expect(await devicesOfGina()).toEqual(['gina-phone', 'mallory-2']);

      // On: the same calls without gina's user token are refused and change nothing.
      const { signingKey } = await enableIdentityVerification(ctx().database.db, box, systemClock, projectId);
      for (const [deviceId, token] of [
        ['gina-phone', 'tok-mallory-3'],
        ['mallory-3', 'tok-mallory-4'],
      ] as const) {
        for (const headers of [pub, { ...pub, 'x-service-user-token': userTokenFor(signingKey, 'mallory') }]) {
          const res = await register(headers, { project_user_id: 'gina', fcm_token: token, device_id: deviceId });
          expect(res.statusCode).toBe(401);
          expect(res.headers['x-error-reason']).toBe('IDENTITY_VERIFICATION_FAILED');
        }
      }
      expect(await tokenOf('gina-phone')).toBe('tok-mallory');
      expect(await devicesOfGina()).toEqual(['gina-phone', 'mallory-2']);
      // gina's app, with the token her backend signed for her, refreshes its own device as before.
      const refreshed = await register(
        { ...pub, 'x-service-user-token': userTokenFor(signingKey, 'gina') },
        { project_user_id: 'gina', fcm_token: 'tok-phone-2', device_id: 'gina-phone' },
      );
      expect(refreshed.statusCode).toBe(200);
      expect(await tokenOf('gina-phone')).toBe('tok-phone-2');
    });

    it('is managed with the secret key over REST too (the public key cannot touch it)', async () => {
      const { public: pub, secret } = await ctx().newProject('rest');
      const url = '/api/v1/identity-verification';
      for (const method of ['GET', 'PUT', 'DELETE'] as const)
        expect((await call({ method, url, headers: pub })).statusCode).toBe(401);
      expect((await call({ method: 'GET', url, headers: secret })).json()).toEqual({ enabled: false, since: null });
      const enabled = await call({ method: 'PUT', url, headers: secret });
      expect(enabled.statusCode).toBe(200);
      const signingKey = enabled.json().signing_key as string;
      expect(signingKey).toMatch(/^svc_ik_/);
      const shown = await call({ method: 'GET', url, headers: secret });
      expect(shown.json()).toEqual({ enabled: true, since: expect.any(String) });
      expect(shown.body).not.toContain(signingKey);
      expect((await track(pub, { project_user_id: 'hal', name: 'x' })).statusCode).toBe(401);
      expect(
        (
          await track(
            { ...pub, 'x-service-user-token': userTokenFor(signingKey, 'hal') },
            { project_user_id: 'hal', name: 'x' },
          )
        ).statusCode,
      ).toBe(200);
      // A new key replaces the old one at once.
      const rotated = (await call({ method: 'PUT', url, headers: secret })).json().signing_key as string;
      expect(
        (
          await track(
            { ...pub, 'x-service-user-token': userTokenFor(signingKey, 'hal') },
            { project_user_id: 'hal', name: 'x' },
          )
        ).statusCode,
      ).toBe(401);
      expect(
        (
          await track(
            { ...pub, 'x-service-user-token': userTokenFor(rotated, 'hal') },
            { project_user_id: 'hal', name: 'x' },
          )
        ).statusCode,
      ).toBe(200);
      expect((await call({ method: 'DELETE', url, headers: secret })).json()).toEqual({ enabled: false, since: null });
      expect((await track(pub, { project_user_id: 'hal', name: 'x' })).statusCode).toBe(200);
    });

    it('is managed by the CLI, which prints the signing key once and stores it sealed (and `rate-limit set` knows the client class)', async () => {
      const { project, public: pub } = await ctx().newProject('cli');
      const cliEnv = { ...ctx().database.env, HERALD_SECRET_KEY: SECRET_KEY };
      // Seen as off first: another process turning it on must apply from the next request here too.
      expect((await track(pub, { project_user_id: 'gina', name: 'x' })).statusCode).toBe(200);
      const enabled = await runHerald(['identity', 'enable', '--project', project.project_id, '--json'], cliEnv);
      expect(enabled.code, enabled.stderr).toBe(0);
      const { signing_key: signingKey } = JSON.parse(enabled.stdout) as { signing_key: string };
      expect(signingKey).toMatch(/^svc_ik_[0-9A-Za-z]{43}$/);
      const stored = await ctx()
        .database.db.selectFrom('identity_verification')
        .selectAll()
        .where('project_id', '=', project.project_id)
        .executeTakeFirstOrThrow();
      expect(stored.signing_key).not.toContain(signingKey.slice(7));

      const shown = await runHerald(['identity', 'show', '--project', project.project_id, '--json'], cliEnv);
      expect(JSON.parse(shown.stdout), shown.stderr).toMatchObject({ enabled: true });
      expect(shown.stdout).not.toContain(signingKey);
      const unsigned = await track(pub, { project_user_id: 'gina', name: 'x' });
      expect(unsigned.statusCode, unsigned.body).toBe(401);
      const signed = await track(
        { ...pub, 'x-service-user-token': userTokenFor(signingKey, 'gina') },
        { project_user_id: 'gina', name: 'x' },
      );
      expect(signed.statusCode, signed.body).toBe(200);

      expect((await runHerald(['identity', 'disable', '--project', project.project_id], cliEnv)).stdout).toMatch(/off/);
      expect((await track(pub, { project_user_id: 'gina', name: 'x' })).statusCode).toBe(200);
      const setClient = await runHerald(
        [
          'rate-limit',
          'set',
          '--project',
          project.project_id,
          '--class',
          'client',
          '--per-second',
          '5',
          '--burst',
          '10',
        ],
        cliEnv,
      );
      expect(setClient).toMatchObject({ code: 0, stdout: expect.stringMatching(/^client: 5 per second, burst 10/) });
      const limits = JSON.parse(
        (await runHerald(['rate-limit', 'show', '--project', project.project_id, '--json'], cliEnv)).stdout,
      ).limits;
      expect(limits.client).toEqual({ per_second: 5, burst: 10, source: 'project' });
      expect(limits.management.source).toBe('default');
      const unknown = await runHerald(['identity', 'enable', '--project', 'prj_nope'], cliEnv);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toMatch(/does not exist/);
    });
  });
});
