import { AppError } from '../../errors.js';
import { compileValidator, type SchemaError } from '../../lib/schema-validator.js';
import type { TriggerProperties } from '../../conditions/resolve-trigger-refs.js';
import { describeTriggerError, type Audience, type Target } from '../triggers/trigger-body.js';
import { parseInstant, SCHEDULE_MAX_AHEAD_MS } from '../triggers/trigger-schedule.js';
import { canonicalTimeZone, parseCron, shortestGapMinutes, type Recurrence } from './schedule-cron.js';
import { CreateScheduleBody } from './schedules.schemas.js';

export interface ScheduleInput extends Recurrence {
  inLocalTime: boolean;
  audience: Audience | null;
  properties: TriggerProperties;
}

const INVALID = 'INVALID_SCHEDULE_BODY';
const FIELD_PROBLEMS: Record<string, string> = {
  cron: 'expected a cron expression such as "0 9 * * 1" (minute hour day month weekday), at most 120 characters',
  time_zone: 'expected an IANA time zone such as Europe/Paris',
  in_local_time: 'expected a boolean',
  starts_at: 'expected an RFC 3339 instant such as 2026-12-24T09:00:00Z',
  ends_at: 'expected an RFC 3339 instant such as 2026-12-24T09:00:00Z',
};

/** The first schema error of a schedule body as a 400 saying which field and what it expects. */
export function scheduleBodyError(errors: readonly SchemaError[]): AppError {
  const error = errors[0];
  const [field, ...rest] = (error?.instancePath ?? '').split('/').slice(1);
  if (field === 'audience' || field === 'properties') {
    const inner = errors
      .filter((e) => e.instancePath.startsWith(`/${field}`))
      .map((e) => ({ ...e, instancePath: e.instancePath.slice(field.length + 1) }));
    return new AppError('invalid', INVALID, describeTriggerError(inner, field, field));
  }
  if (field !== undefined && rest.length === 0 && FIELD_PROBLEMS[field])
    return new AppError('invalid', INVALID, `${field}: ${FIELD_PROBLEMS[field]}`);
  if (error?.keyword === 'required')
    return new AppError('invalid', INVALID, `${String(error.params.missingProperty)} is required`);
  if (error?.keyword === 'additionalProperties')
    return new AppError('invalid', INVALID, `Unexpected field "${String(error.params.additionalProperty)}"`);
  return new AppError('invalid', INVALID, 'The body must be a JSON object {"cron", "time_zone", ...}');
}

const checkBody = compileValidator(CreateScheduleBody);

function instant(text: string | undefined, field: string): number | null {
  if (text === undefined) return null;
  const at = parseInstant(text);
  if (at === undefined)
    throw new AppError(
      'invalid',
      'INVALID_INSTANT',
      `${field}: expected an RFC 3339 instant with Z or an offset, such as 2026-12-24T09:00:00+01:00`,
    );
  return at;
}

/**
 * A schedule body checked and normalised (the zone canonical): the shape by the route's schema,
 * then the cron (five fields, a day that exists, at least `minIntervalMs` between fires), the zone
 * and the bounds. The audience and properties are checked against the campaign by the service.
 */
export function parseScheduleBody(body: unknown, now: number, minIntervalMs: number): ScheduleInput {
  const errors = checkBody(body ?? null);
  if (errors) throw scheduleBodyError(errors);
  const input = body as CreateScheduleBody;
  const cron = input.cron.trim();
  const pattern = parseCron(cron);
  const gap = shortestGapMinutes(pattern);
  if (gap * 60_000 < minIntervalMs)
    throw new AppError(
      'invalid',
      'CRON_TOO_FREQUENT',
      `cron: "${cron}" fires ${gap} min apart; schedules fire at most every ${minIntervalMs / 60_000} min (SCHEDULE_MIN_INTERVAL_MS)`,
    );
  const timeZone = canonicalTimeZone(input.time_zone);
  const startsAt = instant(input.starts_at, 'starts_at');
  const endsAt = instant(input.ends_at, 'ends_at');
  if (startsAt !== null && endsAt !== null && startsAt >= endsAt)
    throw new AppError('invalid', 'INVALID_BOUNDS', 'starts_at must be before ends_at');
  if (endsAt !== null && endsAt <= now)
    throw new AppError('invalid', 'INVALID_BOUNDS', `ends_at is in the past (now ${new Date(now).toISOString()})`);
  if (startsAt !== null && startsAt > now + SCHEDULE_MAX_AHEAD_MS)
    throw new AppError('invalid', 'INVALID_BOUNDS', 'starts_at is more than a year ahead');
  const audience = input.audience as { broadcast?: boolean; targets?: Target[] } | undefined;
  return {
    cron,
    timeZone,
    inLocalTime: input.in_local_time ?? false,
    audience:
      audience === undefined
        ? null
        : audience.broadcast === true
          ? { broadcast: true }
          : { targets: audience.targets! },
    properties: input.properties ?? {},
    startsAt,
    endsAt,
  };
}
