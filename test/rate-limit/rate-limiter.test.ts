import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/connect.js';
import { postgresDialect, sqliteDialect } from '../../src/db/dialect.js';
import { systemClock } from '../../src/lib/clock.js';
import { createProject } from '../../src/projects/projects.service.js';
import { createBucketRateLimiter } from '../../src/rate-limit/bucket-rate-limiter.js';
import { bucketBackendFor } from '../../src/rate-limit/create-bucket-store.js';
import { createRateLimiter } from '../../src/rate-limit/create-rate-limiter.js';
import { setProjectRateLimit } from '../../src/rate-limit/rate-limits.service.js';
import { DEFAULT_RATE_LIMITS } from '../../src/settings/rate-limit-settings.js';
import { createMemoryBucketStore } from '../../src/rate-limit/token-buckets.js';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import { manualClock } from '../helpers/clock.js';
import { deleteRedisKeys, REDIS_TEST_URL } from './redis-test.js';

const silent = pino({ level: 'silent' });
const defaults = { ...DEFAULT_RATE_LIMITS, a2a: { perSecond: 0.5, burst: 2 } };

function memoryLimiter(loadOverrides: (id: string) => Promise<Record<string, unknown> | null>) {
  const clock = manualClock();
  const limiter = createBucketRateLimiter({
    store: createMemoryBucketStore(clock.now),
    defaults,
    loadOverrides,
    clock,
    logger: silent,
  });
  return { clock, limiter };
}

describe('bucket rate limiter', () => {
  it('keeps one bucket per class and reports the decision', async () => {
    const { limiter } = memoryLimiter(async () => null);
    expect(await limiter.take('p', 'a2a')).toEqual({
      allowed: true,
      limit: 2,
      remaining: 1,
      resetSeconds: 2,
      retryAfterSeconds: 0,
      windowSeconds: 4,
    });
    await limiter.take('p', 'a2a');
    expect(await limiter.take('p', 'a2a')).toEqual({
      allowed: false,
      limit: 2,
      remaining: 0,
      resetSeconds: 4,
      retryAfterSeconds: 2,
      windowSeconds: 4,
    });
    expect(await limiter.take('p', 'send')).toMatchObject({ allowed: true, limit: 100, remaining: 99 });
  });

  it('reads overrides once per project per 5 s, sharing a load between concurrent takes', async () => {
    let loads = 0;
    let stored: Record<string, unknown> | null = { a2a: { per_second: 1, burst: 7 } };
    const { clock, limiter } = memoryLimiter(async () => {
      loads++;
      return stored;
    });
    const first = await Promise.all([limiter.take('p', 'a2a'), limiter.take('p', 'a2a')]);
    expect(first.map((d) => d.limit)).toEqual([7, 7]);
    stored = null;
    clock.advance(4999);
    expect((await limiter.take('p', 'a2a')).limit).toBe(7);
    expect(loads).toBe(1);
    clock.advance(1);
    expect((await limiter.take('p', 'a2a')).limit).toBe(2);
    expect(loads).toBe(2);
  });

  it('falls back to the last known limits, then the defaults, when overrides cannot be read', async () => {
    let fail = false;
    const { clock, limiter } = memoryLimiter(async () => {
      if (fail) throw new Error('database down');
      return { a2a: { per_second: 1, burst: 9 } };
    });
    expect((await limiter.take('p', 'a2a')).limit).toBe(9);
    fail = true;
    clock.advance(6000);
    expect((await limiter.take('p', 'a2a')).limit).toBe(9);
    expect((await limiter.take('q', 'a2a')).limit).toBe(2);
  });

  it('lets the request through when the store itself throws', async () => {
    const limiter = createBucketRateLimiter({
      store: { take: () => Promise.reject(new Error('boom')), close: async () => {} },
      defaults,
      loadOverrides: async () => null,
      clock: systemClock,
      logger: silent,
    });
    expect(await limiter.take('p', 'a2a')).toMatchObject({ allowed: true, limit: 2 });
  });
});

describe('bucket backend choice', () => {
  it('is Redis when REDIS_URL is set, else PostgreSQL when that is the database, else memory', () => {
    expect(bucketBackendFor({ redisUrl: 'redis://x' }, { dialect: sqliteDialect })).toBe('redis');
    expect(bucketBackendFor({ redisUrl: undefined }, { dialect: postgresDialect })).toBe('postgres');
    expect(bucketBackendFor({ redisUrl: undefined }, { dialect: sqliteDialect })).toBe('memory');
  });
});

const sharedBackends = [...(TEST_DIALECTS.includes('postgres') ? (['postgres'] as const) : []), 'redis'] as const;

describe.each(sharedBackends)('two limiter instances sharing %s', (backend) => {
  let database: TestDatabase;
  const keyPrefix = `rl-test-${randomBytes(6).toString('hex')}:`;
  const env: Record<string, string> = {
    RATE_LIMIT_DEFAULTS: 'a2a=0.001/2',
    ...(backend === 'redis' ? { REDIS_URL: REDIS_TEST_URL } : {}),
  };

  beforeAll(async () => {
    database = await createTestDatabase(backend === 'redis' ? 'sqlite' : 'postgres');
  });
  afterAll(async () => {
    await database.destroy();
    if (backend === 'redis') await deleteRedisKeys(`herald:bucket:${keyPrefix}*`);
  });

  it('spend one bucket per project and class and agree on overrides', async () => {
    const config = loadConfig(env);
    // Two handles on one database, as two Herald instances would have.
    const second = openDatabase(
      database.target.url
        ? { url: database.target.url, schema: database.target.schema!, poolSize: 2 }
        : { sqliteFile: database.target.sqliteFile! },
    );
    const a = createRateLimiter(config, database, { logger: silent, keyPrefix });
    const b = createRateLimiter(config, { ...database, db: second.db }, { logger: silent, keyPrefix });
    try {
      const { project_id: p } = await createProject(database.db, systemClock, 'shared');
      expect((await a.take(p, 'a2a')).remaining).toBe(1);
      expect((await b.take(p, 'a2a')).remaining).toBe(0);
      expect((await a.take(p, 'a2a')).allowed).toBe(false);
      expect((await b.take(p, 'a2a')).allowed).toBe(false);
      expect((await b.take(p, 'trigger')).allowed).toBe(true);

      const { project_id: q } = await createProject(database.db, systemClock, 'override');
      await setProjectRateLimit(database.db, q, 'a2a', 0.001, 3);
      const takes = await Promise.all([a.take(q, 'a2a'), b.take(q, 'a2a'), a.take(q, 'a2a'), b.take(q, 'a2a')]);
      expect(takes.map((d) => d.limit)).toEqual([3, 3, 3, 3]);
      expect(takes.filter((d) => d.allowed)).toHaveLength(3);
      if (backend === 'redis') {
        const admin = new Redis(REDIS_TEST_URL);
        expect(await admin.exists(`herald:bucket:${keyPrefix}${p}:a2a`)).toBe(1);
        await admin.quit();
      }
    } finally {
      await Promise.all([a.close(), b.close()]);
      await second.close();
    }
  });
});
