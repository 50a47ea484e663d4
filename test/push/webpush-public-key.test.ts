import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { enableIdentityVerification } from '../../src/identity/identity.service.js';
import { systemClock } from '../../src/lib/clock.js';
import { setWebPushCredentials } from '../../src/push/credentials/credentials.service.js';
import { createSecretBox } from '../../src/crypto/secret-box.js';
import { createRateLimiter } from '../../src/rate-limit/create-rate-limiter.js';
import type { RateLimiter } from '../../src/rate-limit/rate-limiter.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { manualClock } from '../helpers/clock.js';

const SECRET_KEY = 'cd'.repeat(32);
const URL = '/api/v1/push-credentials/webpush/public-key';
/**
 * A small client bucket that does not refill during the test (PostgreSQL's buckets run on the
 * database clock), so the test sees the public key spend it, and not management's. Every test uses
 * its own project, so its own bucket, and spends at most three public-key calls.
 */
const env = { RATE_LIMIT_DEFAULTS: 'management=1000/1000,client=0.001/3', HERALD_SECRET_KEY: SECRET_KEY };

/** A web app reads the VAPID public key with the project's public key. */
describe.each(TEST_DIALECTS)('the VAPID public key on %s', (dialect) => {
  const clock = manualClock();
  let limiter: RateLimiter | undefined;
  const ctx = useTestContext(dialect, {
    env,
    overrides: (database) => {
      limiter = createRateLimiter(loadConfig(env), database, { clock, logger: pino({ level: 'silent' }) });
      return { rateLimiter: limiter };
    },
  });
  afterAll(async () => {
    await limiter?.close();
  });
  const box = () => createSecretBox(Buffer.from(SECRET_KEY, 'hex'));
  const configureWebPush = (projectId: string) =>
    setWebPushCredentials(
      ctx().database.db,
      box,
      systemClock,
      projectId,
      { subject: 'mailto:ops@example.com' },
      undefined,
    );
  const read = (headers: Record<string, string>) => ctx().inject({ method: 'GET', url: URL, headers });

  it('answers the public key to the public and the secret key alike', async () => {
    const { project, public: pub, secret } = await ctx().newProject('web-app');
    const view = await configureWebPush(project.project_id);
    const expected = view.webpush!.public_key;
    expect(expected).toMatch(/^[A-Za-z0-9_-]{87}$/);
    for (const headers of [pub, secret]) {
      const res = await read(headers);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ public_key: expected });
    }
    // The same value GET /api/v1/push-credentials shows, and nothing secret.
    const settings = await ctx().inject({ method: 'GET', url: '/api/v1/push-credentials', headers: secret });
    expect(settings.json().webpush.public_key).toBe(expected);
    expect(Object.keys((await read(pub)).json())).toEqual(['public_key']);
  });

  it('is a JSON 404 when the project has no Web Push credentials', async () => {
    const { public: pub, secret } = await ctx().newProject('no-webpush');
    for (const headers of [pub, secret]) {
      const res = await read(headers);
      expect([res.statusCode, res.headers['x-error-reason']]).toEqual([404, 'WEB_PUSH_NOT_CONFIGURED']);
      expect(res.json()).toEqual({ error: expect.any(String) });
    }
  });

  it('shows each project its own key only, and refuses missing or foreign keys', async () => {
    const a = await ctx().newProject('key-a');
    const b = await ctx().newProject('key-b');
    const keyA = (await configureWebPush(a.project.project_id)).webpush!.public_key;
    expect((await read(b.public)).statusCode).toBe(404);
    const keyB = (await configureWebPush(b.project.project_id)).webpush!.public_key;
    expect((await read(a.public)).json().public_key).toBe(keyA);
    expect((await read(b.public)).json().public_key).toBe(keyB);
    expect(keyA).not.toBe(keyB);
    const mixed = { ...a.public, 'x-service-project-id': b.project.project_id };
    expect((await read(mixed)).statusCode).toBe(401);
    expect((await read({})).statusCode).toBe(401);
  });

  it('needs no user token when identity verification is on (a project-level read)', async () => {
    const { project, public: pub } = await ctx().newProject('verified');
    const key = (await configureWebPush(project.project_id)).webpush!.public_key;
    await enableIdentityVerification(ctx().database.db, box(), systemClock, project.project_id);
    // Verification is on: a public-key call about a user needs a token ...
    const device = await ctx().inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: { ...pub, 'content-type': 'application/json' },
      payload: JSON.stringify({ project_user_id: 'u1', name: 'opened' }),
    });
    expect(device.statusCode).toBe(401);
    // ... while the project's public key is no one's secret.
    expect((await read(pub)).json()).toEqual({ public_key: key });
  });

  it("spends the public key's client bucket, not the management one", async () => {
    const { project, public: pub, secret } = await ctx().newProject('bucket');
    await configureWebPush(project.project_id);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await ctx().inject({ method: 'GET', url: URL, headers: pub });
      statuses.push(res.statusCode);
      if (i === 0) expect(res.headers['ratelimit-limit']).toBe('3');
      if (res.statusCode === 429) expect(res.headers['retry-after']).toBeDefined();
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    // The secret key draws on management, which the public key's burst left untouched.
    const bySecret = await ctx().inject({ method: 'GET', url: URL, headers: secret });
    expect([bySecret.statusCode, bySecret.headers['ratelimit-limit']]).toEqual([200, '1000']);
  });
});
