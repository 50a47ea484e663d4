import type { Db } from '../db/database.js';
import { takeTokens } from './token-buckets.repository.js';
import { bucketResult, type TokenBucketStore } from './token-buckets.js';

export interface PostgresBucketStoreOptions {
  /** Clock in epoch ms; absent uses the database clock, so every instance agrees on time. */
  now?: (() => number) | undefined;
}

/**
 * Buckets shared by every instance on one PostgreSQL database: one atomic upsert per take
 * (`rate_limit_buckets`), one round trip. The database handle belongs to the caller.
 */
export function createPostgresBucketStore(db: Db, options: PostgresBucketStoreOptions = {}): TokenBucketStore {
  return {
    async take(key, spec, cost = 1) {
      const { tokens, granted } = await takeTokens(db, key, spec, cost, options.now?.());
      return bucketResult(tokens, granted, spec, cost);
    },
    async close() {},
  };
}
