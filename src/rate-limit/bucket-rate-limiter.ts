import type { Logger } from 'pino';
import { LRUCache } from 'lru-cache';
import type { Clock } from '../lib/clock.js';
import type { RateLimitDecision, RateLimiter } from './rate-limiter.js';
import { readOverrides, type ClassLimit, type RateLimits } from '../settings/rate-limit-settings.js';
import type { TokenBucketStore } from './token-buckets.js';

/** How long a project's overrides are cached: a CLI change reaches running servers within this. */
export const OVERRIDE_CACHE_MS = 5000;
const MAX_CACHED_PROJECTS = 10_000;

export interface BucketRateLimiterOptions {
  store: TokenBucketStore;
  defaults: RateLimits;
  /** Reads a project's stored overrides (`projects.rate_limits`). */
  loadOverrides(projectId: string): Promise<Record<string, unknown> | null | undefined>;
  clock: Clock;
  overrideCacheMs?: number;
  /** Prefix of bucket keys (default `rl:`); a key is `<prefix><projectId>:<class>`. */
  keyPrefix?: string;
  logger?: Logger | undefined;
}

/**
 * Rule `rate-limits` over a token bucket store: one bucket per project and class, sized by the project's
 * override or the default. Never throws: if anything unexpected fails, the request is let through
 * (fail open) and a warning is logged; shared-store outages are already absorbed by the store.
 */
export function createBucketRateLimiter(options: BucketRateLimiterOptions): RateLimiter {
  const { store, defaults, clock, logger } = options;
  const ttl = options.overrideCacheMs ?? OVERRIDE_CACHE_MS;
  const prefix = options.keyPrefix ?? 'rl:';
  const cache = new LRUCache<string, { limits: RateLimits; expiresAt: number }>({ max: MAX_CACHED_PROJECTS });
  const loading = new Map<string, Promise<RateLimits>>();

  const load = async (projectId: string): Promise<RateLimits> => {
    const stale = cache.get(projectId);
    let limits: RateLimits;
    try {
      limits = { ...defaults, ...readOverrides(await options.loadOverrides(projectId)) };
    } catch (error) {
      logger?.warn(
        { err: error, projectId },
        'could not read project rate limits; using the last known or default limits',
      );
      limits = stale?.limits ?? defaults;
    }
    cache.set(projectId, { limits, expiresAt: clock.now() + ttl });
    return limits;
  };

  /** The project's cached limits while fresh. */
  const freshLimits = (projectId: string): RateLimits | undefined => {
    const cached = cache.get(projectId);
    return cached && cached.expiresAt > clock.now() ? cached.limits : undefined;
  };
  const limitsFor = (projectId: string): Promise<RateLimits> => {
    const fresh = freshLimits(projectId);
    if (fresh) return Promise.resolve(fresh);
    let pending = loading.get(projectId);
    if (!pending) {
      pending = load(projectId).finally(() => loading.delete(projectId));
      loading.set(projectId, pending);
    }
    return pending;
  };

  return {
    async take(projectId, cls, cost = 1) {
      let limit: ClassLimit = defaults[cls];
      try {
        // A fresh cache entry is used as is: no promise to wait for on almost every request.
        limit = (freshLimits(projectId) ?? (await limitsFor(projectId)))[cls];
        const result = await store.take(
          `${prefix}${projectId}:${cls}`,
          { capacity: limit.burst, refillPerSecond: limit.perSecond },
          cost,
        );
        return decision(limit, result.allowed, result.remaining, result.resetMs, result.retryAfterMs);
      } catch (error) {
        logger?.warn({ err: error, projectId, class: cls }, 'rate limiter failed; letting the request through');
        return decision(limit, true, limit.burst, 0, 0);
      }
    },
    async close() {
      cache.clear();
      await store.close();
    },
  };
}

function decision(
  limit: ClassLimit,
  allowed: boolean,
  remaining: number,
  resetMs: number,
  retryAfterMs: number,
): RateLimitDecision {
  return {
    allowed,
    limit: limit.burst,
    remaining,
    resetSeconds: Math.ceil(resetMs / 1000),
    retryAfterSeconds: Math.ceil(retryAfterMs / 1000),
    windowSeconds: Math.max(1, Math.ceil(limit.burst / limit.perSecond)),
  };
}
