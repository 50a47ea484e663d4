/** How a delay grows over consecutive failures: `baseMs` after the first, doubling each time, never above `capMs`. */
export interface Backoff {
  baseMs: number;
  capMs: number;
}

/**
 * The delay after failure number `attempt` (1-based): `min(capMs, baseMs * 2^(attempt - 1))`. The
 * exponent stops at 30, where any sane cap has long been reached, so a huge attempt count never
 * turns into `Infinity` (or `NaN` with a zero base).
 */
export function backoffMs(attempt: number, { baseMs, capMs }: Backoff): number {
  return Math.min(capMs, baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30));
}

/**
 * The backoff with "equal jitter": half of it fixed, so retries never collapse to zero and hammer
 * what failed, half random, so work that failed together (a provider outage) does not come back as
 * one burst. Since each ceiling doubles the previous one, a delay is never shorter than the one
 * before. Unrounded: callers round as their unit needs.
 */
export function jitteredBackoffMs(attempt: number, backoff: Backoff, random: () => number = Math.random): number {
  const ceiling = backoffMs(attempt, backoff);
  return ceiling / 2 + random() * (ceiling / 2);
}
