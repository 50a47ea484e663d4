import { createMemoryBucketStore, type TokenBucketStore } from './token-buckets.js';

export interface LocalFallbackOptions {
  /** How long to stay on local buckets after the shared store failed before probing it again (default 5000 ms). */
  retrySharedAfterMs?: number;
  now?: () => number;
  /** Called once when an outage starts. */
  onFailure?: (error: unknown) => void;
  /** Called once when the shared store answers again. */
  onRecovery?: () => void;
}

/**
 * Failure policy of the shared stores (Redis, PostgreSQL): when one fails, takes are served by
 * in-process buckets of the same specs, so limits still hold per instance and a limiter outage
 * never turns a request into a 500 or a 503. Every `retrySharedAfterMs` one take probes the shared
 * store (the others stay local meanwhile); the first success switches back.
 */
export function withLocalFallback(shared: TokenBucketStore, options: LocalFallbackOptions = {}): TokenBucketStore {
  const now = options.now ?? Date.now;
  const retryMs = options.retrySharedAfterMs ?? 5000;
  const local = createMemoryBucketStore(now);
  let failing = false;
  let localUntil = 0;
  let probing = false;
  return {
    async take(key, spec, cost = 1) {
      if (failing && (probing || now() < localUntil)) return local.take(key, spec, cost);
      const probe = failing;
      if (probe) probing = true;
      try {
        const result = await shared.take(key, spec, cost);
        if (failing) {
          failing = false;
          options.onRecovery?.();
        }
        return result;
      } catch (error) {
        if (!failing) options.onFailure?.(error);
        failing = true;
        localUntil = now() + retryMs;
        return local.take(key, spec, cost);
      } finally {
        if (probe) probing = false;
      }
    },
    async close() {
      await Promise.allSettled([shared.close(), local.close()]);
    },
  };
}
