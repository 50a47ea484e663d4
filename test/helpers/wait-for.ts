import { setTimeout as sleep } from 'node:timers/promises';
/**
 * Waiting in tests: on a condition, polled, with a deadline, never for a fixed time. A test that
 * sleeps and hopes passes on a quiet machine and fails on a loaded one (or passes without having
 * checked anything); one that polls waits exactly as long as it must.
 */
export interface WaitOptions {
  /** What is awaited, for the failure message. */
  what?: string;
  /** Give up after this long (default 15 s). */
  timeoutMs?: number;
  /** Pause between checks (default 20 ms). */
  intervalMs?: number;
}

/**
 * Polls `check` until it returns something other than `undefined` or `false`, and returns that. A
 * check that throws counts as "not yet"; its last error is named when the deadline passes.
 */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  options: WaitOptions = {},
): Promise<Exclude<T, undefined | false>> {
  const { what = 'a condition', timeoutMs = 15_000, intervalMs = 20 } = options;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as Exclude<T, undefined | false>;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`, { cause: lastError });
    await sleep(intervalMs);
  }
}

/**
 * For rules that something does NOT happen (a call that must not return yet, a job nobody else may
 * take): checks `holds` throughout `forMs` and fails the moment it stops holding. Absence cannot be
 * awaited, so this is an observation window; start it at an event, so it covers the moment that
 * matters.
 */
export async function holdsThroughout(
  holds: () => boolean | Promise<boolean>,
  options: { forMs: number; what: string; intervalMs?: number },
): Promise<void> {
  const end = Date.now() + options.forMs;
  do {
    if (!(await holds())) throw new Error(`${options.what} stopped holding`);
    await sleep(options.intervalMs ?? 20);
  } while (Date.now() < end);
  if (!(await holds())) throw new Error(`${options.what} stopped holding`);
}
