import { AppError } from '../../errors.js';
import { earliestInstant, parseLocalSchedule, type LocalScheduleInput } from './local-time.js';

/** How far in the past `schedule.at` may be (clock skew, a request that waited in a queue): it then fires at once. */
export const SCHEDULE_GRACE_MS = 60_000;
/** How far ahead a trigger may be scheduled. */
export const SCHEDULE_MAX_AHEAD_MS = 365 * 24 * 60 * 60_000;

/**
 * `schedule` of a trigger body: when it fires, as epoch ms. With `local` (`in_local_time`) `at` is
 * when the first zone reaches the local time, and each user gets it at that time in their own zone.
 */
export interface TriggerSchedule {
  at: number;
  local?: LocalScheduleInput;
}

const LOCAL_FIELDS = ['at', 'in_local_time', 'missed', 'fallback_time_zone'];

// RFC 3339 `date-time`: a full date, a time, optional fraction and a required offset. Anchored,
// fixed-width fields, so matching is a single linear pass.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;
const LOCAL = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?$/;
// A date-time that ends with an offset, seconds optional (what `in_local_time` refuses, with that reason).
const WITH_OFFSET = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)$/;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** An RFC 3339 instant (with its offset) as epoch ms, or undefined when `text` is not one. */
export function parseInstant(text: string): number | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return undefined;
  // Day of month checked by a round trip (2026-02-30 is not a date).
  if (new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day || day < 1) return undefined;
  if (m[8] !== undefined && (Number(m[8]) > 23 || Number(m[9]) > 59)) return undefined;
  const ms = Date.parse(text.toUpperCase());
  return Number.isFinite(ms) ? ms : undefined;
}

/** `schedule` as a trigger body gives it: `{"at": "<RFC 3339 instant>"}`; its shape only (see `checkScheduleWindow`). */
export function parseSchedule(
  input: unknown,
  path: string,
  code: string,
  options: { localTime?: boolean } = {},
): TriggerSchedule {
  const fail = (problem: string): never => {
    throw new AppError('invalid', code, `${path}${problem}`);
  };
  if (!isObject(input)) return fail(': expected an object {"at": "<RFC 3339 instant>"}');
  if (options.localTime && input.in_local_time !== undefined && typeof input.in_local_time !== 'boolean')
    fail('.in_local_time: expected true or false');
  if (options.localTime && input.in_local_time === true) {
    const extraLocal = Object.keys(input).find((k) => !LOCAL_FIELDS.includes(k));
    if (extraLocal !== undefined) fail(`: unexpected field "${extraLocal}"`);
    const local = parseLocalSchedule(input, fail, (text) => WITH_OFFSET.test(text));
    return { at: earliestInstant(local), local };
  }
  const allowed = options.localTime ? ['at', 'in_local_time'] : ['at'];
  const extra = Object.keys(input).find((k) => !allowed.includes(k));
  if (extra !== undefined)
    fail(
      options.localTime && LOCAL_FIELDS.includes(extra)
        ? `.${extra}: only with "in_local_time": true`
        : `: unexpected field "${extra}"`,
    );
  if (typeof input.at !== 'string') return fail('.at: expected an RFC 3339 instant such as 2026-12-24T09:00:00Z');
  const at = input.at.length <= 64 ? parseInstant(input.at) : undefined;
  if (at === undefined)
    fail(
      LOCAL.test(input.at)
        ? `.at: a time without an offset is ambiguous; give Z or ±hh:mm (e.g. 2026-12-24T09:00:00+01:00)${options.localTime ? ', or "in_local_time": true to send at that time in each user\'s time zone' : ''}`
        : '.at: expected an RFC 3339 instant such as 2026-12-24T09:00:00Z',
    );
  return { at: at! };
}

/** `at` within [now - grace, now + one year], else a 400 saying which bound it breaks. */
export function checkScheduleWindow(at: number, now: number, path = 'schedule.at'): void {
  if (at < now - SCHEDULE_GRACE_MS)
    throw new AppError(
      'invalid',
      'SCHEDULE_IN_PAST',
      `${path} is ${new Date(at).toISOString()}, more than ${SCHEDULE_GRACE_MS / 1000} s in the past (now ${new Date(now).toISOString()})`,
    );
  if (at > now + SCHEDULE_MAX_AHEAD_MS)
    throw new AppError(
      'invalid',
      'SCHEDULE_TOO_FAR',
      `${path} is ${new Date(at).toISOString()}, more than a year ahead (now ${new Date(now).toISOString()})`,
    );
}

/**
 * The job key of a scheduled trigger's `campaign.plan` job: a reschedule moves that job, a cancel
 * withdraws it (one pending job per trigger, so both are one keyed update).
 */
export const planJobKey = (triggerId: string): string => `campaign.plan:${triggerId}`;
