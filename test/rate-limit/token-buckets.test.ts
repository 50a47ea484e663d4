import { describe, expect, it } from 'vitest';
import { bucketResult, createMemoryBucketStore, refill } from '../../src/rate-limit/token-buckets.js';
import { manualClock } from '../helpers/clock.js';

const spec = { capacity: 3, refillPerSecond: 2 };

describe('refill arithmetic', () => {
  it('adds refillPerSecond per elapsed second, capped at capacity', () => {
    expect(refill(0, 1000, 1500, spec)).toBe(1);
    expect(refill(0.5, 0, 250, spec)).toBe(1);
    expect(refill(1, 0, 10_000, spec)).toBe(3);
  });

  it('adds nothing when the clock stands still or steps back', () => {
    expect(refill(1.25, 5000, 5000, spec)).toBe(1.25);
    expect(refill(1.25, 5000, 4000, spec)).toBe(1.25);
  });

  it('clamps a bucket above a lowered capacity', () => {
    expect(refill(10, 0, 0, spec)).toBe(3);
  });
});

describe('bucketResult', () => {
  it('reports whole tokens left, time to full and no wait when allowed', () => {
    expect(bucketResult(1.5, true, spec, 1)).toEqual({ allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 750 });
    expect(bucketResult(3, true, spec, 1)).toEqual({ allowed: true, remaining: 3, retryAfterMs: 0, resetMs: 0 });
  });

  it('reports the wait for the missing tokens when refused', () => {
    expect(bucketResult(0.5, false, spec, 1)).toEqual({
      allowed: false,
      remaining: 0,
      retryAfterMs: 250,
      resetMs: 1250,
    });
    expect(bucketResult(0, false, spec, 2)).toMatchObject({ retryAfterMs: 1000, resetMs: 1500 });
  });
});

describe('memory bucket store', () => {
  it('allows a burst of capacity, then refuses with the time to the next token', async () => {
    const clock = manualClock();
    const store = createMemoryBucketStore(clock.now);
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await store.take('k', spec));
    expect(results.map((r) => r.allowed)).toEqual([true, true, true, false]);
    expect(results.map((r) => r.remaining)).toEqual([2, 1, 0, 0]);
    expect(results[3]).toMatchObject({ retryAfterMs: 500, resetMs: 1500 });
  });

  it('refills with time: exactly the tokens earned become available', async () => {
    const clock = manualClock();
    const store = createMemoryBucketStore(clock.now);
    for (let i = 0; i < 3; i++) await store.take('k', spec);
    clock.advance(499);
    expect((await store.take('k', spec)).allowed).toBe(false);
    clock.advance(1);
    expect((await store.take('k', spec)).allowed).toBe(true);
    expect((await store.take('k', spec)).allowed).toBe(false);
    clock.advance(60_000);
    expect((await store.take('k', spec)).remaining).toBe(2);
  });

  it('keeps keys apart and honours a cost above one', async () => {
    const clock = manualClock();
    const store = createMemoryBucketStore(clock.now);
    expect(await store.take('a', spec, 3)).toMatchObject({ allowed: true, remaining: 0 });
    expect(await store.take('a', spec, 1)).toMatchObject({ allowed: false });
    expect(await store.take('b', spec, 2)).toMatchObject({ allowed: true, remaining: 1 });
    expect(await store.take('c', spec, 4)).toMatchObject({ allowed: false, remaining: 3 });
  });

  it('mints no tokens twice when the clock steps back and forward again', async () => {
    const clock = manualClock(10_000);
    const store = createMemoryBucketStore(clock.now);
    for (let i = 0; i < 3; i++) await store.take('k', spec);
    clock.set(9_000);
    expect((await store.take('k', spec)).allowed).toBe(false);
    clock.set(10_000);
    expect((await store.take('k', spec)).allowed).toBe(false);
  });
});
