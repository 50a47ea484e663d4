import type { Db } from '../db/database.js';
import { takeTokens } from './token-buckets.repository.js';
import { bucketResult, type BucketResult, type BucketSpec, type TokenBucketStore } from './token-buckets.js';

export interface PostgresBucketStoreOptions {
  /** Clock in epoch ms; absent uses the database clock, so every instance agrees on time. */
  now?: (() => number) | undefined;
}

interface Batch {
  key: string;
  spec: BucketSpec;
  cost: number;
  waiters: { resolve: (result: BucketResult) => void; reject: (error: unknown) => void }[];
}

/**
 * Buckets shared by every instance on one PostgreSQL database (`rate_limit_buckets`), one atomic
 * upsert per statement. A project's bucket is one row that every request of the project updates, so
 * statements on it wait for each other's row lock: at most one statement per bucket is in flight
 * from this process, and the takes that arrive meanwhile go together in the next one (one round
 * trip and one row update for all of them, each answered as if taken in turn). A take that arrives
 * while nothing is in flight is sent at once. The database handle belongs to the caller.
 */
export function createPostgresBucketStore(db: Db, options: PostgresBucketStoreOptions = {}): TokenBucketStore {
  /** Takes waiting for their statement, by bucket and spec; a bucket's key is in `sending` while one runs. */
  const waiting = new Map<string, Batch>();
  const sending = new Set<string>();

  async function send(id: string): Promise<void> {
    const batch = waiting.get(id);
    if (!batch) return;
    waiting.delete(id);
    sending.add(id);
    const { key, spec, cost, waiters } = batch;
    try {
      const { tokens, granted } = await takeTokens(db, key, spec, cost, options.now?.(), waiters.length);
      const before = tokens + granted * cost;
      waiters.forEach((w, i) =>
        w.resolve(
          i < granted
            ? bucketResult(before - (i + 1) * cost, true, spec, cost)
            : bucketResult(tokens, false, spec, cost),
        ),
      );
    } catch (error) {
      for (const w of waiters) w.reject(error);
    } finally {
      sending.delete(id);
      void send(id);
    }
  }

  return {
    take(key, spec, cost = 1) {
      return new Promise<BucketResult>((resolve, reject) => {
        // Takes share a statement only when they ask the same of the same bucket.
        const id = `${key}\n${spec.capacity}\n${spec.refillPerSecond}\n${cost}`;
        let batch = waiting.get(id);
        if (!batch) waiting.set(id, (batch = { key, spec, cost, waiters: [] }));
        batch.waiters.push({ resolve, reject });
        if (!sending.has(id)) void send(id);
      });
    },
    async close() {},
  };
}
