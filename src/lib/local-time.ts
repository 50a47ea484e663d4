import { LRUCache } from 'lru-cache';

/**
 * Wall-clock time in IANA time zones, with `Intl.DateTimeFormat` (the runtime's own tz database, so
 * no library to keep up to date): validating a zone name, and turning a local date-time in a zone
 * into the instant it names, with a stated rule for the hour a DST change skips or repeats. Pure
 * functions (local-time triggers use them, and so may recurring schedules).
 */

/** A local date-time without an offset: what a wall clock shows. Months 1-12. */
export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

/** What to do with a wall time a DST change skips (`gap`) or shows twice (`fold`). */
export interface WallTimeOptions {
  /** Spring forward: `next` is the first valid instant after the gap (02:30 goes at 03:00). */
  gap?: 'next';
  /** Fall back: `first` is the earlier of the two instants (the one before the clocks go back). */
  fold?: 'first' | 'last';
}

// `YYYY-MM-DDTHH:MM[:SS[.fff]]`, no offset. Anchored, fixed-width fields: one linear pass.
const LOCAL_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?$/;
// An IANA name (`Europe/Paris`, `America/Argentina/Buenos_Aires`, `UTC`, `Etc/GMT+5`): letters
// first, so `+01:00` (an offset Intl also accepts, but no zone) is refused.
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/;

/** A local date-time (`2026-12-24T09:00`, seconds optional) as its fields, or undefined when it is not one (or not a real date). */
export function parseWallTime(text: string): WallTime | undefined {
  const m = text.length <= 40 ? LOCAL_DATE_TIME.exec(text) : null;
  if (!m) return undefined;
  const [year, month, day, hour, minute] = m.slice(1, 6).map(Number) as [number, number, number, number, number];
  const second = m[6] === undefined ? 0 : Number(m[6]);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  if (new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day) return undefined;
  return { year, month, day, hour, minute, second };
}

/** `2026-12-24T09:00:00`: the form a wall time is shown and stored in. */
export function formatWallTime(w: WallTime): string {
  const p = (n: number, width = 2) => String(n).padStart(width, '0');
  return `${p(w.year, 4)}-${p(w.month)}-${p(w.day)}T${p(w.hour)}:${p(w.minute)}:${p(w.second)}`;
}

/** The same wall time `days` later (calendar days: the clock reading, not 24-hour steps). */
export function addDays(w: WallTime, days: number): WallTime {
  const d = new Date(Date.UTC(w.year, w.month - 1, w.day + days));
  return { ...w, year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

const formatters = new LRUCache<string, Intl.DateTimeFormat>({ max: 1000 });
// Names already refused: a tenant's property values repeat, and building a formatter to learn a
// name is invalid costs far more than a lookup.
const refused = new LRUCache<string, true>({ max: 10_000 });

function formatterOf(zone: string): Intl.DateTimeFormat | undefined {
  let f = formatters.get(zone);
  if (f || refused.has(zone)) return f;
  if (!ZONE_NAME.test(zone)) {
    refused.set(zone, true);
    return undefined;
  }
  try {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  } catch {
    refused.set(zone, true);
    return undefined;
  }
  formatters.set(zone, f);
  return f;
}

/** Whether `zone` is a time zone name the runtime knows (IANA, links such as `US/Eastern` included). */
export function isValidTimeZone(zone: unknown): zone is string {
  return typeof zone === 'string' && formatterOf(zone) !== undefined;
}

/** The wall time in `zone` at `instant` (epoch ms). */
export function wallTimeAt(instant: number, zone: string): WallTime {
  const f = formatterOf(zone);
  if (!f) throw new RangeError(`not a time zone: ${zone}`);
  const w: WallTime = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0 };
  for (const part of f.formatToParts(instant)) if (part.type in w) w[part.type as keyof WallTime] = Number(part.value);
  return w;
}

const asUtc = (w: WallTime) => Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);

/** The zone's offset from UTC at `instant`, in ms (UTC+01:00 is 3,600,000). */
export function offsetAt(instant: number, zone: string): number {
  const whole = Math.floor(instant / 1000) * 1000;
  return asUtc(wallTimeAt(whole, zone)) - whole;
}

/** `+05:30`, `-04:00`, `+00:00`. */
export function formatOffset(ms: number): string {
  const minutes = Math.round(Math.abs(ms) / 60_000);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${ms < 0 ? '-' : '+'}${p(Math.floor(minutes / 60))}:${p(minutes % 60)}`;
}

const HOUR = 3_600_000;

/**
 * The instant (epoch ms) at which the clocks in `zone` show `wall`. A wall time the zone skips
 * (spring forward) goes at the first valid instant after the gap, so 02:30 on the day New York
 * jumps from 02:00 to 03:00 is 03:00 EDT; one the zone shows twice (fall back) is the first
 * occurrence by default (01:30 EDT, not 01:30 EST).
 */
export function zonedWallTimeToInstant(wall: WallTime | string, zone: string, options: WallTimeOptions = {}): number {
  const w = typeof wall === 'string' ? parseWallTime(wall) : wall;
  if (!w) throw new RangeError(`not a local date-time: ${JSON.stringify(wall)}`);
  if (!isValidTimeZone(zone)) throw new RangeError(`not a time zone: ${JSON.stringify(zone)}`);
  const local = asUtc(w);
  // Offsets change at most once within a day in every zone: the ones in force a day either side
  // are the only candidates (both equal away from a change).
  const before = offsetAt(local - 24 * HOUR, zone);
  const after = offsetAt(local + 24 * HOUR, zone);
  const candidates = [...new Set([before, after, offsetAt(local, zone)])]
    .map((offset) => local - offset)
    .filter((t) => asUtc(wallTimeAt(t, zone)) === local)
    .sort((a, b) => a - b);
  if (candidates.length > 0) return options.fold === 'last' ? candidates.at(-1)! : candidates[0]!;
  // In a gap: the change happened between `local - before` (still the old offset... shown later)
  // and `local - after`; find the first second with the new offset.
  let lo = local - Math.max(before, after);
  let hi = local - Math.min(before, after);
  while (hi - lo > 1000) {
    const mid = Math.floor((lo + hi) / 2000) * 1000;
    if (offsetAt(mid, zone) === after) hi = mid;
    else lo = mid;
  }
  return hi;
}
