import type { RateLimiter } from '../../src/rate-limit/rate-limiter.js';

/** A limiter that never refuses (tests and benchmarks that are not about rate limits). */
export const unlimitedRateLimiter: RateLimiter = {
  take: async () => ({ allowed: true, limit: 1_000_000, remaining: 1_000_000, resetSeconds: 0, retryAfterSeconds: 0 }),
  close: async () => {},
};
