/** Time source passed to code whose behaviour depends on time, so tests can control it. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
