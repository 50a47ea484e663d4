import type { Clock } from '../../src/lib/clock.js';

/** A clock that moves only when told to, so refill tests never depend on timing. */
export interface ManualClock extends Clock {
  advance(ms: number): void;
  set(ms: number): void;
}

export function manualClock(start = 1_800_000_000_000): ManualClock {
  let t = start;
  return {
    now: () => t,
    advance: (ms) => {
      t += ms;
    },
    set: (ms) => {
      t = ms;
    },
  };
}
