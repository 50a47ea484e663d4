import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createRateLimiter } from '../../src/rate-limit/create-rate-limiter.js';
import type { RateLimiter } from '../../src/rate-limit/rate-limiter.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { runHerald } from '../rate-limit/herald-cli.js';
import { manualClock } from '../helpers/clock.js';

/** management: 1 token a second, burst 3, so a test spends a bucket in four requests. */
const env = { RATE_LIMIT_DEFAULTS: 'management=1/3' };
const silent = pino({ level: 'silent' });

describe.each(TEST_DIALECTS)('rate limits on %s', (dialect) => {
  const clock = manualClock();
  let limiter: RateLimiter | undefined;
  // The real limiter (PostgreSQL buckets on PostgreSQL, memory on SQLite), driven by a manual clock.
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

  const createUser = (headers: Record<string, string>, id = 'u1') =>
    ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: JSON.stringify({ project_user_id: id }),
    });
  const limitHeaders = (res: Awaited<ReturnType<typeof createUser>>) => ({
    limit: res.headers['ratelimit-limit'],
    remaining: res.headers['ratelimit-remaining'],
    reset: res.headers['ratelimit-reset'],
  });

  it('answers 429 with Retry-After and RateLimit headers once the bucket is spent', async () => {
    const { secret } = await ctx().newProject('spend');
    const ok = [];
    for (let i = 0; i < 3; i++) ok.push(await createUser(secret, `u${i}`));
    expect(ok.map((r) => r.statusCode)).toEqual([200, 200, 200]);
    expect(ok.map(limitHeaders)).toEqual([
      { limit: '3', remaining: '2', reset: '1' },
      { limit: '3', remaining: '1', reset: '2' },
      { limit: '3', remaining: '0', reset: '3' },
    ]);
    expect(ok[0]!.headers['ratelimit-policy']).toBe('3;w=3');

    const refused = await createUser(secret, 'u3');
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['content-type']).toMatch(/^application\/json/);
    expect(refused.json()).toEqual({ error: expect.stringMatching(/rate limit exceeded/i) });
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['x-error-reason']).toBe('RATE_LIMITED');
    expect(limitHeaders(refused)).toEqual({ limit: '3', remaining: '0', reset: '3' });
  });

  it('lets requests through again once the bucket has refilled', async () => {
    const { secret } = await ctx().newProject('refill');
    for (let i = 0; i < 3; i++) await createUser(secret);
    clock.advance(999);
    expect((await createUser(secret)).statusCode).toBe(429);
    clock.advance(1);
    const again = await createUser(secret);
    expect(again.statusCode).toBe(200);
    expect(limitHeaders(again)).toEqual({ limit: '3', remaining: '0', reset: '3' });
    expect((await createUser(secret)).statusCode).toBe(429);
  });

  it('keeps projects apart: one project spending its bucket does not limit another', async () => {
    const a = await ctx().newProject('a');
    const b = await ctx().newProject('b');
    for (let i = 0; i < 3; i++) await createUser(a.secret);
    expect((await createUser(a.secret)).statusCode).toBe(429);
    const other = await createUser(b.secret);
    expect(other.statusCode).toBe(200);
    expect(other.headers['ratelimit-remaining']).toBe('2');
  });

  it('does not count requests that fail authentication', async () => {
    const res = await createUser({
      'x-service-project-id': ctx().project.project_id,
      'x-service-api-key': 'svc_sk_wrong',
    });
    expect(res.statusCode).toBe(401);
    expect(res.headers['ratelimit-limit']).toBeUndefined();
  });

  it('applies a per-project override set with the CLI once the cache delay has passed', async () => {
    const { project, secret } = await ctx().newProject('cli');
    const cliEnv = { ...ctx().database.env, ...env };
    expect(limitHeaders(await createUser(secret))).toMatchObject({ limit: '3', remaining: '2' });

    const set = await runHerald(
      [
        'rate-limit',
        'set',
        '--project',
        project.project_id,
        '--class',
        'management',
        '--per-second',
        '0.5',
        '--burst',
        '5',
      ],
      cliEnv,
    );
    expect(set).toMatchObject({ code: 0, stderr: '' });
    expect(set.stdout).toMatch(/management: 0\.5 per second, burst 5 \(running servers apply it within 5 s\)/);

    // Cached for 5 s: the old limit still holds.
    expect(limitHeaders(await createUser(secret))).toMatchObject({ limit: '3', remaining: '1' });
    clock.advance(5001);
    const responses = [];
    for (let i = 0; i < 4; i++) responses.push(await createUser(secret));
    // 1 token left + 2.5 earned in 5 s, in a bucket of 5.
    expect(responses.map((r) => r.statusCode)).toEqual([200, 200, 200, 429]);
    const last = responses[3]!;
    expect(last.headers['ratelimit-limit']).toBe('5');
    expect(last.headers['ratelimit-policy']).toBe('5;w=10');
    expect(last.headers['retry-after']).toBe('1');

    const shown = await runHerald(['rate-limit', 'show', '--project', project.project_id, '--json'], cliEnv);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toEqual({
      project_id: project.project_id,
      limits: {
        management: { per_second: 0.5, burst: 5, source: 'project' },
        client: { per_second: 1000, burst: 2000, source: 'default' },
        send: { per_second: 20, burst: 100, source: 'default' },
        trigger: { per_second: 10, burst: 50, source: 'default' },
        a2a: { per_second: 50, burst: 100, source: 'default' },
      },
    });

    const reset = await runHerald(
      ['rate-limit', 'reset', '--project', project.project_id, '--class', 'management'],
      cliEnv,
    );
    expect(reset).toMatchObject({ code: 0, stdout: expect.stringMatching(/management: back to the defaults/) });
    clock.advance(5001);
    expect((await createUser(secret)).headers['ratelimit-limit']).toBe('3');
  });

  it('refuses invalid CLI input with a clear message', async () => {
    const cliEnv = { ...ctx().database.env, ...env };
    const project = ctx().project.project_id;
    const badClass = await runHerald(
      ['rate-limit', 'set', '--project', project, '--class', 'bulk', '--per-second', '1'],
      cliEnv,
    );
    expect(badClass.code).toBe(1);
    expect(badClass.stderr).toMatch(/class must be one of management, client, send, trigger, a2a, got "bulk"/);
    const zero = await runHerald(
      ['rate-limit', 'set', '--project', project, '--class', 'send', '--per-second', '0', '--burst', '2.5'],
      cliEnv,
    );
    expect(zero.code).toBe(1);
    expect(zero.stderr).toMatch(
      /per-second must be a number from 0\.001 to 1000000, got 0; burst must be a whole number/,
    );
  });
});

describe.each(TEST_DIALECTS)('rate limits with the shared store down on %s', (dialect) => {
  let limiter: RateLimiter | undefined;
  // Nothing listens on port 1: every Redis command fails.
  const downEnv = { ...env, REDIS_URL: 'redis://127.0.0.1:1' };
  const ctx = useTestContext(dialect, {
    env: downEnv,
    overrides: (database) => {
      limiter = createRateLimiter(loadConfig(downEnv), database, { logger: silent });
      return { rateLimiter: limiter };
    },
  });
  afterAll(async () => {
    await limiter?.close();
  });

  it('serves requests (never 500 or 503) and still limits on per-instance buckets', async () => {
    const statuses = [];
    for (let i = 0; i < 4; i++) {
      const res = await ctx().inject({
        method: 'POST',
        url: '/api/v1/users',
        headers: { ...ctx().secret, 'content-type': 'application/json' },
        payload: '{"project_user_id":"x"}',
      });
      statuses.push(res.statusCode);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});
