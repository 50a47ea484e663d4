/**
 * A `datetime-local` value (`2026-12-24T09:00`, a wall-clock time with no zone) as the RFC 3339
 * instant Herald's `schedule.at` requires, read in the browser's time zone and written with its
 * offset (`2026-12-24T09:00:00+01:00`), so the person and the API name the same instant.
 * A wall-clock time that the zone skips (a DST gap) becomes the instant the browser maps it to.
 */
export function localInputToInstant(value: string): string {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(value))
    throw new Error('Choose a date and time to send');
  const date = new Date(value); // a date-time without a zone is local time (ECMAScript)
  if (Number.isNaN(date.getTime())) throw new Error('Choose a date and time to send');
  const two = (n: number) => String(n).padStart(2, '0');
  const offset = -date.getTimezoneOffset();
  const sign = offset < 0 ? '-' : '+';
  const zone = `${sign}${two(Math.floor(Math.abs(offset) / 60))}:${two(Math.abs(offset) % 60)}`;
  return (
    `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())}` +
    `T${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}${zone}`
  );
}

/** `date` as a `datetime-local` value in the browser's time zone (minutes). */
export function instantToLocalInput(date: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return (
    `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())}` +
    `T${two(date.getHours())}:${two(date.getMinutes())}`
  );
}

// The zones furthest ahead of and behind UTC (Pacific/Kiritimati at +14:00, Etc/GMT+12 at −12:00):
// a wall-clock time is reached first in the one and last in the other.
const EARLIEST_OFFSET_MS = 14 * 3_600_000;
const LATEST_OFFSET_MS = 12 * 3_600_000;

/**
 * A `datetime-local` value sent "in each user's local time" (`schedule.in_local_time`): the local
 * date-time Herald takes (`2026-12-24T09:00`, no offset), and the first and last instants at which
 * any zone reaches it, which bound when the trigger sends.
 */
export function localTimeWindow(value: string): { at: string; first: Date; last: Date } {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/.exec(value.slice(0, 16));
  if (!m || (value.length > 16 && !/^:\d{2}(\.\d+)?$/.test(value.slice(16))))
    throw new Error('Choose a date and time to send');
  const [year, month, day, hour, minute] = m.slice(1).map(Number) as [number, number, number, number, number];
  const wall = Date.UTC(year, month - 1, day, hour, minute);
  // Date.UTC rolls over (month 13, day 40, hour 25): a value that does not come back is no date.
  const back = new Date(wall);
  if (back.getUTCMonth() !== month - 1 || back.getUTCDate() !== day || back.getUTCHours() !== hour || minute > 59)
    throw new Error('Choose a date and time to send');
  return {
    at: value.slice(0, 16),
    first: new Date(wall - EARLIEST_OFFSET_MS),
    last: new Date(wall + LATEST_OFFSET_MS),
  };
}
