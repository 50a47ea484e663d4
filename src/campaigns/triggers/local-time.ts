import { AppError } from '../../errors.js';
import {
  addDays,
  formatWallTime,
  isValidTimeZone,
  parseWallTime,
  zonedWallTimeToInstant,
  type WallTime,
} from '../../lib/local-time.js';
import type { LocalTimeSettings } from '../../settings/local-time-settings.js';

export { isValidTimeZone, zonedWallTimeToInstant } from '../../lib/local-time.js';

/**
 * Local-time triggers (rule `local-time-triggers`): `schedule.in_local_time` sends to each user when
 * the clocks of the user's time zone show `schedule.at`. What a user's zone is, when the user is
 * due, and the window a local time must fall in; pure (the waves are in `trigger-waves.repository.ts`).
 */

export const MISSED_POLICIES = ['skip', 'send_now', 'next_day'] as const;
/** A user whose local time had passed when the trigger was created: not sent, sent at once, or sent the next day at that time. */
export type MissedPolicy = (typeof MISSED_POLICIES)[number];

/** How far in the past a user's local time may be at the trigger's creation and still count as on time. */
export const LOCAL_GRACE_MS = 60_000;
/** How far ahead the earliest zone's time may be. */
export const LOCAL_MAX_AHEAD_MS = 365 * 24 * 3_600_000;
// The zones furthest ahead of and behind UTC: every zone reaches a wall time between these two.
const EARLIEST_ZONE = 'Etc/GMT-14'; // UTC+14 (Pacific/Kiritimati)
const LATEST_ZONE = 'Etc/GMT+12'; // UTC-12

/** A local-time schedule as the trigger stores it (`campaign_triggers.local_schedule`), the project's settings as they stood. */
export interface LocalSchedule {
  /** The wall time, `2026-12-24T09:00:00`. */
  at: string;
  missed: MissedPolicy;
  fallbackTimeZone: string | null;
  timeZoneProperty: string;
  defaultTimeZone: string;
}

/** The part of a local schedule a trigger body gives (the settings are added when it is stored). */
export type LocalScheduleInput = Pick<LocalSchedule, 'at' | 'missed' | 'fallbackTimeZone'>;

/**
 * `schedule` with `in_local_time: true`: `at` a local date-time without an offset, `missed` and
 * `fallback_time_zone` optional. `fail` raises the caller's 400.
 */
export function parseLocalSchedule(
  input: Record<string, unknown>,
  fail: (problem: string) => never,
  hasOffset: (text: string) => boolean,
): LocalScheduleInput {
  const at = input.at;
  if (typeof at !== 'string') return fail('.at: expected a local date-time such as 2026-12-24T09:00');
  const wall = parseWallTime(at);
  if (!wall)
    return fail(
      hasOffset(at)
        ? `.at: with in_local_time, at is a wall-clock time without an offset (e.g. ${at.slice(0, 16)}); each user gets it in their own time zone`
        : '.at: expected a local date-time such as 2026-12-24T09:00 (seconds optional, no offset)',
    );
  const missed = input.missed ?? 'skip';
  if (!MISSED_POLICIES.includes(missed as MissedPolicy)) fail(`.missed: expected one of ${MISSED_POLICIES.join(', ')}`);
  const fallback = input.fallback_time_zone;
  if (fallback !== undefined && !isValidTimeZone(fallback))
    fail('.fallback_time_zone: expected an IANA time zone name such as Europe/Paris');
  return {
    at: formatWallTime(wall),
    missed: missed as MissedPolicy,
    fallbackTimeZone: fallback ?? null,
  };
}

const wallOf = (s: Pick<LocalSchedule, 'at'>): WallTime => parseWallTime(s.at)!;

/** When the first zone (UTC+14) reaches the wall time: the trigger starts then. */
export const earliestInstant = (s: Pick<LocalSchedule, 'at'>): number =>
  zonedWallTimeToInstant(wallOf(s), EARLIEST_ZONE);

/**
 * The window of a local time at creation: refused when every zone has passed it by more than the
 * grace (with `next_day`, when every zone has passed the next day's too; `send_now` is refused
 * like `skip` then, since it would be an immediate trigger for everyone), or when the earliest zone
 * reaches it more than a year ahead (the last wave is then at most a year and about 26 hours ahead).
 * Returns when the trigger starts.
 */
export function checkLocalWindow(s: LocalScheduleInput, now: number, path = 'schedule.at'): number {
  const wall = wallOf(s);
  const lastWall = s.missed === 'next_day' ? addDays(wall, 1) : wall;
  const last = zonedWallTimeToInstant(lastWall, LATEST_ZONE);
  if (last < now - LOCAL_GRACE_MS)
    throw new AppError(
      'invalid',
      'SCHEDULE_IN_PAST',
      `${path} ${formatWallTime(lastWall)} in local time has passed in every time zone (the last, UTC-12, reached it at ${new Date(last).toISOString()}; now ${new Date(now).toISOString()})`,
    );
  const first = zonedWallTimeToInstant(wall, EARLIEST_ZONE);
  if (first > now + LOCAL_MAX_AHEAD_MS)
    throw new AppError(
      'invalid',
      'SCHEDULE_TOO_FAR',
      `${path} ${s.at} in local time is more than a year ahead (the first zone, UTC+14, reaches it at ${new Date(first).toISOString()}; now ${new Date(now).toISOString()})`,
    );
  return Math.max(first, now);
}

/** The stored schedule: the body's fields with the project's settings as they stand now. */
export const storedLocalSchedule = (input: LocalScheduleInput, settings: LocalTimeSettings): LocalSchedule => ({
  ...input,
  timeZoneProperty: settings.timeZoneProperty,
  defaultTimeZone: settings.defaultTimeZone,
});

/** A user's zone: the property when it names a valid zone, else the schedule's fallback, else the project's default. */
export function zoneOf(s: LocalSchedule, properties: Record<string, unknown>): string {
  const own = properties[s.timeZoneProperty];
  if (isValidTimeZone(own)) return own;
  return s.fallbackTimeZone ?? s.defaultTimeZone;
}

/** When a zone's users are due: on time, or by the missed policy; undefined when they are skipped. */
export interface DueInstant {
  at: number;
  missed: 'send_now' | 'next_day' | null;
}

/**
 * When the users of `zone` get a trigger created at `createdAt`. A local time the zone skips (spring
 * forward) goes at the next valid instant; one it shows twice (fall back) at the first.
 */
export function dueInstant(s: LocalSchedule, zone: string, createdAt: number): DueInstant | undefined {
  const options = { gap: 'next', fold: 'first' } as const;
  const wall = wallOf(s);
  const at = zonedWallTimeToInstant(wall, zone, options);
  if (at >= createdAt - LOCAL_GRACE_MS) return { at, missed: null };
  if (s.missed === 'send_now') return { at: createdAt, missed: 'send_now' };
  if (s.missed === 'next_day') {
    const next = zonedWallTimeToInstant(addDays(wall, 1), zone, options);
    if (next >= createdAt - LOCAL_GRACE_MS) return { at: next, missed: 'next_day' };
  }
  return undefined;
}
