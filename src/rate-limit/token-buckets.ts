/**
 * Token buckets keyed by string, the primitive under both the per-project API rate limits (rule `rate-limits`)
 * and the provider quotas of push delivery. Implementations: in-process memory (embedded SQLite,
 * one instance), PostgreSQL and Redis (shared across instances); `create-bucket-store.ts` picks one.
 *
 * A key that was never used, or whose bucket has refilled completely, is a full bucket. A `cost`
 * larger than `capacity` never succeeds.
 */
export interface BucketSpec {
  /** Largest burst. */
  capacity: number;
  refillPerSecond: number;
}

export interface BucketResult {
  allowed: boolean;
  /** Whole tokens left after this take. */
  remaining: number;
  /** When refused: milliseconds until `cost` tokens are available; else 0. */
  retryAfterMs: number;
  /** Milliseconds until the bucket is full again. */
  resetMs: number;
}

export interface TokenBucketStore {
  take(key: string, spec: BucketSpec, cost?: number): Promise<BucketResult>;
  close(): Promise<void>;
}

/** Pure refill arithmetic shared by the memory backend and tests. */
export function refill(tokens: number, updatedAtMs: number, nowMs: number, spec: BucketSpec): number {
  const elapsed = Math.max(0, nowMs - updatedAtMs) / 1000;
  return Math.min(spec.capacity, tokens + elapsed * spec.refillPerSecond);
}

/** The caller's view of a bucket that holds `tokens` after a take (every backend answers through this). */
export function bucketResult(tokens: number, allowed: boolean, spec: BucketSpec, cost: number): BucketResult {
  return {
    allowed,
    remaining: Math.max(0, Math.floor(tokens)),
    retryAfterMs: allowed ? 0 : Math.max(1, Math.ceil(((cost - tokens) / spec.refillPerSecond) * 1000)),
    resetMs: Math.max(0, Math.ceil(((spec.capacity - tokens) / spec.refillPerSecond) * 1000)),
  };
}

/** Above this many keys, the memory backend drops buckets that have refilled completely. */
const MEMORY_SWEEP_THRESHOLD = 10_000;

export function createMemoryBucketStore(now: () => number = Date.now): TokenBucketStore {
  const buckets = new Map<string, { tokens: number; updatedAt: number; fullAt: number }>();
  let sweepAt = MEMORY_SWEEP_THRESHOLD;
  const sweep = (t: number): void => {
    for (const [key, bucket] of buckets) if (bucket.fullAt <= t) buckets.delete(key);
    sweepAt = Math.max(MEMORY_SWEEP_THRESHOLD, buckets.size * 2);
  };
  return {
    async take(key, spec, cost = 1) {
      const t = now();
      const current = buckets.get(key);
      const tokens = current ? refill(current.tokens, current.updatedAt, t, spec) : spec.capacity;
      const allowed = tokens >= cost;
      const left = allowed ? tokens - cost : tokens;
      const result = bucketResult(left, allowed, spec, cost);
      // A clock that steps back must not mint tokens twice for the same interval.
      const updatedAt = Math.max(current?.updatedAt ?? t, t);
      if (current) {
        // Updated in place: no allocation per request.
        current.tokens = left;
        current.updatedAt = updatedAt;
        current.fullAt = updatedAt + result.resetMs;
      } else buckets.set(key, { tokens: left, updatedAt, fullAt: updatedAt + result.resetMs });
      if (buckets.size > sweepAt) sweep(t);
      return result;
    },
    async close() {
      buckets.clear();
    },
  };
}
