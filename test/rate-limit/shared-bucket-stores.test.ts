import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/connect.js';
import { createPostgresBucketStore } from '../../src/rate-limit/postgres-bucket-store.js';
import { createRedisBucketStore } from '../../src/rate-limit/redis-bucket-store.js';
import type { TokenBucketStore } from '../../src/rate-limit/token-buckets.js';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import { manualClock, type ManualClock } from '../helpers/clock.js';
import { deleteRedisKeys, REDIS_TEST_URL } from './redis-test.js';

/** Opens stores of one shared backend: each call is a separate connection, like another instance. */
interface Backend {
  open(now?: () => number): TokenBucketStore;
}

const backends: Array<[string, () => Promise<{ backend: Backend; cleanup: () => Promise<void> }>]> = [
  [
    'redis',
    async () => {
      const keyPrefix = `herald-test:${randomBytes(6).toString('hex')}:`;
      const stores: TokenBucketStore[] = [];
      return {
        backend: {
          open: (now) => {
            const store = createRedisBucketStore(REDIS_TEST_URL, { keyPrefix, now });
            stores.push(store);
            return store;
          },
        },
        async cleanup() {
          await Promise.all(stores.map((s) => s.close()));
          await deleteRedisKeys(`${keyPrefix}*`);
        },
      };
    },
  ],
];
if (TEST_DIALECTS.includes('postgres')) {
  backends.push([
    'postgres',
    async () => {
      const database: TestDatabase = await createTestDatabase('postgres');
      const handles: DatabaseHandle[] = [];
      return {
        backend: {
          open: (now) => {
            const handle = openDatabase({ url: database.target.url, schema: database.target.schema!, poolSize: 2 });
            handles.push(handle);
            return createPostgresBucketStore(handle.db, { now });
          },
        },
        async cleanup() {
          await Promise.all(handles.map((h) => h.close()));
          await database.destroy();
        },
      };
    },
  ]);
}

const spec = { capacity: 3, refillPerSecond: 2 };

describe.each(backends)('%s bucket store', (_name, setup) => {
  let backend: Backend;
  let cleanup: () => Promise<void>;
  let clock: ManualClock;
  let store: TokenBucketStore;
  let key = 0;
  const nextKey = () => `k${++key}`;

  beforeAll(async () => {
    ({ backend, cleanup } = await setup());
    clock = manualClock();
    store = backend.open(clock.now);
  });
  afterAll(async () => {
    await cleanup();
  });

  it('allows a burst of capacity, then refuses with the time to the next token', async () => {
    const k = nextKey();
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await store.take(k, spec));
    expect(results.map((r) => r.allowed)).toEqual([true, true, true, false]);
    expect(results.map((r) => r.remaining)).toEqual([2, 1, 0, 0]);
    expect(results[3]).toEqual({ allowed: false, remaining: 0, retryAfterMs: 500, resetMs: 1500 });
  });

  it('refills exactly the tokens earned, and never twice after the clock steps back', async () => {
    const k = nextKey();
    for (let i = 0; i < 3; i++) await store.take(k, spec);
    clock.advance(499);
    expect((await store.take(k, spec)).allowed).toBe(false);
    clock.advance(1);
    expect((await store.take(k, spec)).allowed).toBe(true);
    clock.advance(-1000);
    expect((await store.take(k, spec)).allowed).toBe(false);
    clock.advance(1000);
    expect((await store.take(k, spec)).allowed).toBe(false);
    clock.advance(60_000);
    expect(await store.take(k, spec)).toEqual({ allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 500 });
  });

  it('honours a cost above one and a lowered capacity', async () => {
    const k = nextKey();
    expect(await store.take(k, { capacity: 10, refillPerSecond: 1 }, 4)).toMatchObject({ allowed: true, remaining: 6 });
    expect(await store.take(k, spec)).toMatchObject({ allowed: true, remaining: 2 });
    expect(await store.take(nextKey(), spec, 4)).toMatchObject({ allowed: false, remaining: 3 });
  });

  it('is atomic: concurrent takes never hand out more than the bucket holds', async () => {
    const k = nextKey();
    const others = [backend.open(clock.now), backend.open(clock.now)];
    const all = [store, ...others];
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => all[i % all.length]!.take(k, { capacity: 10, refillPerSecond: 0.001 })),
    );
    expect(results.filter((r) => r.allowed)).toHaveLength(10);
  });

  it('answers concurrent takes from one instance as if taken in turn', async () => {
    const k = nextKey();
    const slow = { capacity: 5, refillPerSecond: 0.001 };
    const results = await Promise.all(Array.from({ length: 8 }, () => store.take(k, slow)));
    const granted = results.filter((r) => r.allowed);
    expect(granted.map((r) => r.remaining).sort()).toEqual([0, 1, 2, 3, 4]);
    for (const refused of results.filter((r) => !r.allowed)) {
      expect(refused).toMatchObject({ remaining: 0 });
      expect(refused.retryAfterMs).toBeGreaterThan(900_000);
    }
    // Takes of different costs at once never spend more than the bucket holds.
    const k2 = nextKey();
    const mixed = await Promise.all(
      [3, 1, 3, 1, 0].map(async (cost) => ({
        cost,
        ...(await store.take(k2, { capacity: 5, refillPerSecond: 0.001 }, cost)),
      })),
    );
    expect(mixed.filter((r) => r.allowed).reduce((n, r) => n + r.cost, 0)).toBeLessThanOrEqual(5);
    expect(mixed.find((r) => r.cost === 0)!.allowed).toBe(true);
  });

  it('shares one bucket between instances, on the server clock', async () => {
    const k = nextKey();
    const a = backend.open();
    const b = backend.open();
    const slow = { capacity: 2, refillPerSecond: 0.001 };
    expect((await a.take(k, slow)).allowed).toBe(true);
    expect((await b.take(k, slow)).allowed).toBe(true);
    const refused = await a.take(k, slow);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBeGreaterThan(900_000);
    expect((await b.take(k, slow)).allowed).toBe(false);
  });
});

describe('redis bucket keys', () => {
  it('expire once the bucket would be full again', async () => {
    const keyPrefix = `herald-test:${randomBytes(6).toString('hex')}:`;
    const store = createRedisBucketStore(REDIS_TEST_URL, { keyPrefix });
    const admin = new Redis(REDIS_TEST_URL);
    try {
      await store.take('k', { capacity: 10, refillPerSecond: 1 }, 3);
      const ttl = await admin.pttl(`${keyPrefix}k`);
      expect(ttl).toBeGreaterThan(2000);
      expect(ttl).toBeLessThanOrEqual(4000);
    } finally {
      await admin.del(`${keyPrefix}k`);
      await admin.quit();
      await store.close();
    }
  });
});
