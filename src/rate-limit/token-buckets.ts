/**
 * Token buckets keyed by string, the primitive under both the per-project API rate limits (R18)
 * and the provider quotas of push delivery. Implementations: in-process memory (embedded SQLite,
 * one instance), PostgreSQL and Redis (shared across instances).
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

export function createMemoryBucketStore(now: () => number = Date.now): TokenBucketStore {
  const buckets = new Map<string, { tokens: number; updatedAt: number }>();
  return {
    async take(key, spec, cost = 1) {
      const t = now();
      const current = buckets.get(key);
      const tokens = current ? refill(current.tokens, current.updatedAt, t, spec) : spec.capacity;
      const allowed = tokens >= cost;
      const left = allowed ? tokens - cost : tokens;
      buckets.set(key, { tokens: left, updatedAt: t });
      return {
        allowed,
        remaining: Math.floor(left),
        retryAfterMs: allowed ? 0 : Math.ceil(((cost - left) / spec.refillPerSecond) * 1000),
        resetMs: Math.ceil(((spec.capacity - left) / spec.refillPerSecond) * 1000),
      };
    },
    async close() {
      buckets.clear();
    },
  };
}
