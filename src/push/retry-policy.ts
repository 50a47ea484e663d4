import { setTimeout as wait } from 'node:timers/promises';
import { jitteredBackoffMs } from '../lib/retry-delay.js';
import type { AttemptResult } from './push.types.js';

export interface RetryPolicy {
  /** Attempts per send, the first included. */
  maxAttempts: number;
  /** Backoff before the second attempt; doubles each time up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** FCM asks for at least a minute of backoff after QUOTA_EXCEEDED (throttling-and-quotas). */
  quotaExceededDelayMs: number;
  /**
   * The longest a send waits for a rate limit (a provider's 429 or a quota hold) before answering
   * `_RATE_LIMITED`: a minute's quota backoff never holds a request or a campaign chunk; campaigns
   * retry such sends through the job queue instead.
   */
  maxRateLimitWaitMs: number;
  /** Time kept free before the deadline for recording results and answering. */
  deadlineMarginMs: number;
  random: () => number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 5,
  baseDelayMs: 1000,
  maxDelayMs: 30_000,
  quotaExceededDelayMs: 60_000,
  maxRateLimitWaitMs: 5000,
  deadlineMarginMs: 1000,
  random: Math.random,
};

/**
 * Wait before the next attempt after `attempts` attempts: exponential backoff with equal jitter
 * (`lib/retry-delay.ts`), never shorter than the provider's Retry-After or the result's minimum.
 */
export function retryDelayMs(policy: RetryPolicy, attempts: number, result: AttemptResult): number {
  const backoff = { baseMs: policy.baseDelayMs, capMs: policy.maxDelayMs };
  const jittered = jitteredBackoffMs(attempts, backoff, policy.random);
  return Math.ceil(Math.max(jittered, result.retryAfterMs ?? 0, result.minDelayMs ?? 0));
}

/** Waits `ms`, or less when `signal` aborts first (never rejects). */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  wait(Math.max(0, ms), undefined, signal ? { signal } : {}).catch(() => undefined);
