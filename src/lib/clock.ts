/** Time source passed to code whose behaviour depends on time, so tests can control it. */
export interface Clock {
  /** A function value (passed around unbound, e.g. to token buckets), not a method. */
  now: () => number;
}

/** One day in milliseconds (retention days, daily partitions). */
export const DAY_MS = 86_400_000;

export const systemClock: Clock = { now: () => Date.now() };
