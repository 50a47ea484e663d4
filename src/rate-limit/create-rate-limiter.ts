import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { DatabaseHandle } from '../db/connect.js';
import { systemClock, type Clock } from '../lib/clock.js';
import { createLogger } from '../logger.js';
import { findProject } from '../projects/projects.service.js';
import { createBucketRateLimiter } from './bucket-rate-limiter.js';
import { createTokenBucketStore } from './create-bucket-store.js';
import type { RateLimiter } from './rate-limiter.js';
import type { TokenBucketStore } from './token-buckets.js';

export interface RateLimiterOptions {
  logger?: Logger;
  /** Drives bucket refill and the override cache (tests); absent: the shared store's own clock. */
  clock?: Clock;
  /** Use this store instead of the one `createTokenBucketStore` picks. */
  store?: TokenBucketStore;
  overrideCacheMs?: number;
  keyPrefix?: string;
}

/**
 * The per-project rate limiter (rule `rate-limits`): buckets in Redis when `REDIS_URL` is set, else in
 * PostgreSQL, else in memory (embedded SQLite); limits from `RATE_LIMIT_DEFAULTS` and the
 * project's overrides (`herald rate-limit set`).
 */
export function createRateLimiter(
  config: Config,
  database: DatabaseHandle,
  options: RateLimiterOptions = {},
): RateLimiter {
  const logger = options.logger ?? createLogger(config.logLevel);
  const clock = options.clock ?? systemClock;
  const now = options.clock ? () => clock.now() : undefined;
  const store = options.store ?? createTokenBucketStore(config, database, { logger, now });
  return createBucketRateLimiter({
    store,
    defaults: config.rateLimitDefaults,
    loadOverrides: async (projectId) => (await findProject(database.db, projectId))?.rateLimits,
    clock,
    logger,
    ...(options.overrideCacheMs !== undefined ? { overrideCacheMs: options.overrideCacheMs } : {}),
    ...(options.keyPrefix !== undefined ? { keyPrefix: options.keyPrefix } : {}),
  });
}
