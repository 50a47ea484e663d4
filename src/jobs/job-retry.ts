import { jitteredBackoffMs } from '../lib/retry-delay.js';

/** Delay before the first retry; each later retry doubles it. */
export const RETRY_BASE_MS = 1000;
/** Cap of the exponential part: with 25 attempts a job keeps retrying for about two days. */
export const RETRY_CAP_MS = 6 * 60 * 60 * 1000;

/**
 * Backoff after failed attempt `attempt` (1-based), with equal jitter (`lib/retry-delay.ts`): from
 * 0.5-1 s up to 3-6 h, each delay at least as long as the previous one. Total over 24 retries
 * (25 attempts): about 47 h on average.
 */
export function retryDelayMs(attempt: number, random: () => number = Math.random): number {
  return Math.round(jitteredBackoffMs(attempt, { baseMs: RETRY_BASE_MS, capMs: RETRY_CAP_MS }, random));
}

export interface RetryJobOptions<P = unknown> {
  /** Run again after this long; default 0 (at once) when the run does not count, else the backoff. */
  delayMs?: number;
  /** Replace the job's payload for the next run ("continue with only the remaining part"). */
  payload?: P;
  /**
   * Whether this run counts as a failed attempt (stores `reason` as `last_error`, and the job goes
   * dead once `maxAttempts` is reached). Default `false`: the run is not counted at all.
   */
  countAsAttempt?: boolean;
  reason?: string;
}

/**
 * Thrown by a handler to reschedule its job instead of failing it:
 *
 * @example
 * // fan-out: handle one page, then continue with the rest without spending an attempt
 * throw new RetryJobError({ payload: { ...payload, cursor: nextCursor } });
 * // a provider said "retry after 30 s": wait without counting it as a failure
 * throw new RetryJobError({ delayMs: 30_000 });
 * // part of a batch failed: re-queue only the failed part, with backoff, counted
 * throw new RetryJobError({ payload: { recipients: failed }, countAsAttempt: true, reason: '3 sends failed' });
 */
export class RetryJobError<P = unknown> extends Error {
  readonly delayMs: number | undefined;
  readonly payload: P | undefined;
  readonly countAsAttempt: boolean;

  constructor(options: RetryJobOptions<P> = {}) {
    super(options.reason ?? 'job asked to be retried');
    this.name = 'RetryJobError';
    if (options.delayMs !== undefined && !(Number.isFinite(options.delayMs) && options.delayMs >= 0))
      throw new RangeError('delayMs must be a finite number >= 0');
    this.delayMs = options.delayMs;
    this.payload = options.payload;
    this.countAsAttempt = options.countAsAttempt ?? false;
  }
}

/**
 * Thrown by a handler whose job can no longer succeed (a deadline of its own has passed): no
 * further attempt is made; the job is finalised if its handler has a finaliser, else dead, keeping
 * `payload` (when given) as what was left undone.
 */
export class AbandonJobError<P = unknown> extends Error {
  readonly payload: P | undefined;

  constructor(reason: string, options: { payload?: P } = {}) {
    super(reason);
    this.name = 'AbandonJobError';
    this.payload = options.payload;
  }
}

/** The text stored as `last_error`: the error's name and message (stacks would bloat the row). */
export function describeJobError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
