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
