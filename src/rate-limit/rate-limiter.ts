import type { RateLimitClass } from '../settings/rate-limit-settings.js';

export interface RateLimitDecision {
  allowed: boolean;
  /** Bucket capacity (burst). */
  limit: number;
  remaining: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
  /** Seconds until one more request would be allowed (only when refused). */
  retryAfterSeconds: number;
  /** Seconds the bucket takes to refill from empty: the window of `limit` (`RateLimit-Policy: limit;w=window`). */
  windowSeconds?: number;
}

/** Token buckets per project and class (rule `rate-limits`). Implementations share state across instances. */
export interface RateLimiter {
  take(projectId: string, cls: RateLimitClass, cost?: number): Promise<RateLimitDecision>;
  close(): Promise<void>;
}
