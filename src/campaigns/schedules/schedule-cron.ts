import { Cron, CronPattern } from 'croner';
import { AppError } from '../../errors.js';

/*
 * A recurring schedule's cron expression and time zone, through croner (time-zone aware, DST rules
 * of Vixie cron, no dependencies; docs/decisions.md). What croner decides at a DST change is the
 * schedule's behaviour, stated in docs/campaigns.md: a fixed time the clocks skip (02:30 on a
 * spring-forward day) fires at the first valid time after the gap, one they show twice fires once.
 */

/** The most a schedule may look ahead for its next occurrence: a cron firing less than once a year ends. */
export const OCCURRENCE_HORIZON_MS = 366 * 24 * 60 * 60_000;
const MAX_CRON_LENGTH = 120;
const DAY_MINUTES = 24 * 60;
// An IANA name (`Europe/Paris`, `America/Argentina/Buenos_Aires`, `UTC`, `Etc/GMT+5`): a letter
// first, so an offset such as `+01:00` (which Intl also takes) is no zone.
const ZONE_NAME = /^[A-Za-z][\w+\-/]{0,63}$/;

export interface Recurrence {
  cron: string;
  timeZone: string;
  startsAt: number | null;
  endsAt: number | null;
}

/** The cron expression parsed: five fields (minute hour day-of-month month day-of-week) or a nickname (`@daily`). */
export function parseCron(text: string, path = 'cron'): CronPattern {
  const fail = (problem: string): never => {
    throw new AppError('invalid', 'INVALID_CRON', `${path}: ${problem}`);
  };
  if (text.trim() === '') fail('expected a cron expression such as "0 9 * * 1" (minute hour day month weekday)');
  if (text.length > MAX_CRON_LENGTH) fail(`at most ${MAX_CRON_LENGTH} characters`);
  const fields = text.trim().split(/\s+/);
  if (!text.trim().startsWith('@') && fields.length !== 5)
    fail(
      `expected 5 fields (minute hour day month weekday), got ${fields.length}` +
        (fields.length === 6 || fields.length === 7 ? ': seconds and years are not supported' : ''),
    );
  let pattern: CronPattern;
  try {
    pattern = new CronPattern(text.trim(), undefined, { mode: '5-part' });
  } catch (error) {
    return fail((error instanceof Error ? error.message : String(error)).replace(/^CronPattern: /, ''));
  }
  if (neverFires(pattern)) fail(`"${text}" names no day that exists (such as February 30)`);
  return pattern;
}

/**
 * A day-of-month list naming no day of the chosen months (`0 9 30 2 *`) can never fire; croner
 * would search years for it, so it is refused before any search.
 */
function neverFires(p: CronPattern): boolean {
  if (p.starDOM || p.lastDayOfMonth || p.nearestWeekdays.some(Boolean)) return false;
  // With a weekday list, croner fires on either (unless `+`/AND): the weekdays alone make it fire.
  if (!p.starDOW && !p.useAndLogic) return false;
  const longest = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  return !p.month.some((on, m) => on && p.day.some((d, i) => d && i + 1 <= longest[m]!));
}

/**
 * The shortest time between two fires, in minutes, from the minute and hour fields as if every day
 * matched (so never longer than the real one, DST aside): the wall-clock minutes of a day in order,
 * with the wrap from the last to the first of the next day.
 */
export function shortestGapMinutes(p: CronPattern): number {
  const minutes: number[] = [];
  for (let h = 0; h < 24; h++) if (p.hour[h]) for (let m = 0; m < 60; m++) if (p.minute[m]) minutes.push(h * 60 + m);
  if (minutes.length <= 1) return DAY_MINUTES;
  let gap = minutes[0]! + DAY_MINUTES - minutes[minutes.length - 1]!;
  for (let i = 1; i < minutes.length; i++) gap = Math.min(gap, minutes[i]! - minutes[i - 1]!);
  return gap;
}

/** An IANA time zone name in its canonical spelling (`europe/paris` → `Europe/Paris`), else a 400. */
export function canonicalTimeZone(zone: string, path = 'time_zone'): string {
  const fail = (): never => {
    throw new AppError(
      'invalid',
      'INVALID_TIME_ZONE',
      `${path}: expected an IANA time zone such as Europe/Paris or America/New_York, got "${zone.slice(0, 64)}"`,
    );
  };
  if (!ZONE_NAME.test(zone)) fail();
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return fail();
  }
}

/**
 * The first occurrence strictly after `after` within [starts_at, ends_at] (both inclusive) and at
 * most `OCCURRENCE_HORIZON_MS` past the later of `after` and `starts_at`; undefined when there is
 * none (the schedule has ended).
 */
export function nextOccurrence(r: Recurrence, after: number): number | undefined {
  const from = Math.max(after, (r.startsAt ?? Number.NEGATIVE_INFINITY) - 1);
  const horizon = from + OCCURRENCE_HORIZON_MS;
  const stop = r.endsAt === null ? horizon : Math.min(horizon, r.endsAt + 1);
  if (stop <= from) return undefined;
  const cron = new Cron(r.cron, { timezone: r.timeZone, mode: '5-part', stopAt: new Date(stop) });
  const next = cron.nextRun(new Date(from));
  const at = next?.getTime();
  return at !== undefined && at > from && at < stop ? at : undefined;
}
