import { AppError } from '../../errors.js';
import { addDays, isValidTimeZone, wallTimeAt, zonedWallTimeToInstant } from '../../lib/local-time.js';

/**
 * Quiet hours (rule `quiet-hours`): a daily window of wall-clock times, `{"start": "21:00", "end":
 * "08:00"}`, read in each user's own time zone. `start` is inside, `end` is not; a window whose end
 * is before its start runs over midnight; equal times are refused (a window of nothing or of the
 * whole day says nothing a campaign means). Pure functions over `src/lib/local-time.ts`.
 */
export interface QuietWindow {
  start: string;
  end: string;
}

// `HH:MM`, 00:00-23:59: anchored, fixed width, one linear pass.
const CLOCK_TIME = /^([01]\d|2[0-3]):([0-5]\d)$/;

const minutesOf = (time: string): number => {
  const m = CLOCK_TIME.exec(time)!;
  return Number(m[1]) * 60 + Number(m[2]);
};

/** A window from tenant input, or the caller's 400 (`INVALID_QUIET_HOURS`) naming the field at `path`. */
export function parseQuietWindow(value: unknown, path: string): QuietWindow {
  const fail = (why: string) => new AppError('invalid', 'INVALID_QUIET_HOURS', `${path}${why}`);
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw fail(': expected {"start": "HH:MM", "end": "HH:MM"}');
  const { start, end, ...rest } = value as Record<string, unknown>;
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) throw fail(`: unknown field "${extra.slice(0, 64)}" (expected start and end)`);
  for (const [name, time] of [
    ['start', start],
    ['end', end],
  ] as const)
    if (typeof time !== 'string' || !CLOCK_TIME.test(time))
      throw fail(`.${name}: expected a 24-hour time HH:MM (00:00 to 23:59), got ${JSON.stringify(time)?.slice(0, 40)}`);
  if (start === end)
    throw fail(`: start and end are both ${String(start)}; a window must not be empty or the whole day`);
  return { start: start as string, end: end as string };
}

/** Whether the wall time `minutes` (since local midnight) falls in the window. */
export function insideWindow(window: QuietWindow, minutes: number): boolean {
  const start = minutesOf(window.start);
  const end = minutesOf(window.end);
  return start < end ? minutes >= start && minutes < end : minutes >= start || minutes < end;
}

/**
 * When the window holding `now` ends in `zone`, or undefined when `now` is outside it. The end is
 * the next time the zone's clocks show `end`: an end the zone skips (spring forward) goes at the
 * first valid instant after the gap, an end the zone shows twice (fall back) at its first showing.
 */
export function quietUntil(window: QuietWindow, zone: string, now: number): number | undefined {
  const wall = wallTimeAt(now, zone);
  const minutes = wall.hour * 60 + wall.minute;
  if (!insideWindow(window, minutes)) return undefined;
  const endMinutes = minutesOf(window.end);
  const endWall = { ...wall, hour: Math.floor(endMinutes / 60), minute: endMinutes % 60, second: 0 };
  const day = minutes < endMinutes ? endWall : addDays(endWall, 1);
  const first = zonedWallTimeToInstant(day, zone, { gap: 'next', fold: 'first' });
  if (first > now) return first;
  // On the second pass of a fall-back hour the first showing of `end` is past: its second showing.
  const last = zonedWallTimeToInstant(day, zone, { gap: 'next', fold: 'last' });
  return last > now ? last : zonedWallTimeToInstant(addDays(day, 1), zone, { gap: 'next', fold: 'first' });
}

/**
 * When a user in `zone` stops being held at `now` by these windows (a campaign's and their own):
 * the latest end of the windows holding them, or undefined when none does. The per-user step of
 * the batch's quiet-hours gate, and of the eligibility explanation.
 */
export function heldUntil(windows: readonly QuietWindow[], zone: string, now: number): number | undefined {
  let until: number | undefined;
  for (const w of windows) {
    const end = quietUntil(w, zone, now);
    if (end !== undefined && (until === undefined || end > until)) until = end;
  }
  return until;
}

/** A user's zone (rule `local-time-triggers`): the property when it names a valid zone, else the project's default. */
export function userZone(
  properties: Record<string, unknown>,
  settings: { timeZoneProperty: string; defaultTimeZone: string },
): string {
  const own = properties[settings.timeZoneProperty];
  return isValidTimeZone(own) ? own : settings.defaultTimeZone;
}

/** A campaign's `quiet_hours` at save time: a window, `false` (none) or null (the project's default). */
export function checkQuietHoursField(value: unknown): QuietWindow | false | null {
  if (value === null || value === false) return value;
  return parseQuietWindow(value, 'quiet_hours');
}
