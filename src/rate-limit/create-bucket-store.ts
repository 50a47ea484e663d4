import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { DatabaseHandle } from '../db/connect.js';
import { withLocalFallback } from './fallback-bucket-store.js';
import { createPostgresBucketStore } from './postgres-bucket-store.js';
import { createRedisBucketStore } from './redis-bucket-store.js';
import { createMemoryBucketStore, type TokenBucketStore } from './token-buckets.js';

export type BucketBackend = 'redis' | 'postgres' | 'memory';

export interface BucketStoreOptions {
  logger?: Logger | undefined;
  /** Clock in epoch ms for every backend (tests); absent: Redis or PostgreSQL use their server clock. */
  now?: (() => number) | undefined;
  /** Prefix of Redis keys (default `herald:bucket:`). */
  redisKeyPrefix?: string | undefined;
}

/**
 * Redis when `REDIS_URL` is set, else the database when it is shared (PostgreSQL), else in-process
 * memory. Embedded SQLite is one Herald instance by design (rule `instances`), so its buckets live in memory and
 * start full after a restart.
 */
export function bucketBackendFor(
  config: Pick<Config, 'redisUrl'>,
  database: Pick<DatabaseHandle, 'dialect'>,
): BucketBackend {
  if (config.redisUrl !== undefined) return 'redis';
  return database.dialect.embedded ? 'memory' : 'postgres';
}

/**
 * The token bucket store for this process. Shared backends fall back to local buckets while they
 * fail (see `withLocalFallback`), so callers never see their errors.
 */
export function createTokenBucketStore(
  config: Pick<Config, 'redisUrl'>,
  database: DatabaseHandle,
  options: BucketStoreOptions = {},
): TokenBucketStore {
  const { logger, now } = options;
  const backend = bucketBackendFor(config, database);
  if (backend === 'memory') return createMemoryBucketStore(now);
  const shared =
    backend === 'redis'
      ? createRedisBucketStore(config.redisUrl!, {
          keyPrefix: options.redisKeyPrefix,
          now,
          onError: (error) => logger?.warn({ err: error }, 'redis connection for rate limits failed'),
        })
      : createPostgresBucketStore(database.db, { now });
  return withLocalFallback(shared, {
    ...(now ? { now } : {}),
    onFailure: (error) =>
      logger?.warn(
        { err: error, backend },
        'shared rate limit store failed; using per-instance buckets until it recovers',
      ),
    onRecovery: () => logger?.info({ backend }, 'shared rate limit store recovered'),
  });
}
