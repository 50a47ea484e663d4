import { AppError } from '../../errors.js';
import { compileValidator, type SchemaError } from '../../lib/schema-validator.js';
import type { TriggerProperties } from '../../conditions/resolve-trigger-refs.js';
import {
  AudienceSchema,
  MAX_TARGETS,
  MAX_TRIGGER_PROPERTIES,
  TriggerBodySchema,
  TriggerPropertiesSchema,
} from './trigger.schemas.js';
import { parseSchedule, type TriggerSchedule } from './trigger-schedule.js';

export type TargetKey = 'project_user_id' | 'device_id' | 'user_id';
/** Rule `trigger-body`: a target names one user (by either id) or one device. */
export type Target = { [K in TargetKey]: { [P in K]: string } }[TargetKey];
export type Audience = { broadcast: true } | { targets: Target[] };

export interface TriggerInput {
  /** Absent: the campaign's default audience (rule `default-audience`). */
  audience?: Audience;
  properties: TriggerProperties;
  /** Absent: sent at once. */
  schedule?: TriggerSchedule;
}

/** The code every malformed trigger body answers (behind "Failed to send campaign trigger message"). */
const INVALID_TRIGGER_BODY = 'INVALID_TRIGGER_BODY';

const TARGET_RULE = 'a target holds exactly one of project_user_id, device_id or user_id';

/** `["targets", "0", "device_id"]` under `root` → `root.targets[0].device_id`. */
const fieldOf = (root: string, parts: string[]): string =>
  parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc === '' ? p : `${acc}.${p}`), root);

const unexpected = (error: SchemaError) => `unexpected field "${String(error.params.additionalProperty)}"`;

/** What is wrong in an audience, at `parts` below it. */
function audienceProblem(error: SchemaError, parts: string[]): [at: string[], problem: string] {
  const [first, index, key] = parts;
  if (first === 'targets' && key !== undefined)
    return [parts, 'expected 1 to 255 characters without control characters'];
  if (first === 'targets' && index !== undefined)
    return [parts, error.keyword === 'type' ? 'expected an object' : TARGET_RULE];
  if (first === 'targets') return [parts, `expected an array of 1 to ${MAX_TARGETS} targets`];
  if (first === 'broadcast' && error.keyword === 'type') return [parts, 'expected a boolean'];
  if (first === undefined && error.keyword === 'type') return [[], 'expected an object'];
  if (first === undefined && error.keyword === 'additionalProperties') return [[], unexpected(error)];
  return [[], 'give broadcast: true or targets'];
}

/** What is wrong in trigger properties, at `parts` below them. */
function propertiesProblem(error: SchemaError, parts: string[]): [at: string[], problem: string] {
  if (parts.length > 0) return [parts, 'values are strings (up to 8 KiB), numbers or booleans'];
  if (error.keyword === 'maxProperties') return [[], `at most ${MAX_TRIGGER_PROPERTIES} properties`];
  if (error.keyword === 'type') return [[], 'expected an object'];
  return [[], 'property names are 1 to 128 characters'];
}

/**
 * A union reports each branch's failure; the deepest error says what is wrong (a target, not "no
 * branch matched"), and at one depth an unexpected field says more than a missing one.
 */
function deepestOf(errors: readonly SchemaError[]): [SchemaError, string[]] | undefined {
  let best: [SchemaError, string[]] | undefined;
  for (const error of errors) {
    const parts = error.instancePath.split('/').slice(1);
    const deeper = best === undefined || parts.length > best[1].length;
    const clearer = best !== undefined && parts.length === best[1].length && error.keyword === 'additionalProperties';
    if (deeper || clearer) best = [error, parts];
  }
  return best;
}

type Part = 'body' | 'audience' | 'properties';

/** Ajv's errors for one part of a trigger (`root` names it in the message) → one `path: problem` message. */
export function describeTriggerError(errors: readonly SchemaError[], part: Part, root: string): string {
  const deepest = deepestOf(errors);
  if (deepest === undefined) return `${root}: malformed`;
  const [error, parts] = deepest;
  if (part === 'body') {
    const [field, ...rest] = parts;
    if (field === 'audience' || field === 'properties')
      return describeTriggerError([{ ...error, instancePath: rest.map((p) => `/${p}`).join('') }], field, field);
    return error.keyword === 'additionalProperties'
      ? `Unexpected field "${String(error.params.additionalProperty)}"`
      : 'The body must be a JSON object';
  }
  const [at, problem] = part === 'audience' ? audienceProblem(error, parts) : propertiesProblem(error, parts);
  return `${fieldOf(root, at)}: ${problem}`;
}

/** A body the trigger schema refused, as the 400 its route answers (`Failed to send campaign trigger message`). */
export function triggerBodyError(errors: readonly SchemaError[]): AppError {
  const deepest = deepestOf(errors);
  if (deepest?.[1][0] === 'schedule') {
    const [error, parts] = deepest;
    const field = parts[1];
    const problem =
      parts.length === 1 && error.keyword === 'additionalProperties'
        ? unexpected(error)
        : field === 'in_local_time'
          ? 'in_local_time: expected true or false'
          : field === 'missed'
            ? 'missed: expected one of skip, send_now, next_day'
            : field === 'fallback_time_zone'
              ? 'fallback_time_zone: expected an IANA time zone name such as Europe/Paris'
              : 'expected {"at": "<RFC 3339 instant>"}';
    return new AppError('invalid', 'INVALID_SCHEDULE', `schedule: ${problem}`);
  }
  return new AppError('invalid', INVALID_TRIGGER_BODY, describeTriggerError(errors, 'body', 'body'));
}

const checkAudience = compileValidator(AudienceSchema);
const checkProperties = compileValidator(TriggerPropertiesSchema);
const checkBody = compileValidator(TriggerBodySchema);

const audienceOf = (input: { broadcast?: boolean; targets?: unknown }): Audience =>
  input.broadcast === true ? { broadcast: true } : { targets: input.targets as Target[] };

/** An audience as a trigger body or a campaign's `default_audience` gives it (`AudienceSchema`). */
export function parseAudience(input: unknown, path: string, code: string): Audience {
  const errors = checkAudience(input);
  if (errors) throw new AppError('invalid', code, describeTriggerError(errors, 'audience', path));
  return audienceOf(input as { broadcast?: boolean; targets?: unknown });
}

/** Trigger properties (`TriggerPropertiesSchema`); absent is none. */
export function parseTriggerProperties(input: unknown, path: string, code: string): TriggerProperties {
  if (input === undefined) return {};
  const errors = checkProperties(input);
  if (errors) throw new AppError('invalid', code, describeTriggerError(errors, 'properties', path));
  return input as TriggerProperties;
}

/** The trigger body (whole body optional): `{audience?, properties?, schedule?}`; anything else is malformed. */
export function parseTriggerBody(body: unknown): TriggerInput {
  const value = body === undefined ? null : body;
  const errors = checkBody(value);
  if (errors) throw triggerBodyError(errors);
  if (value === null) return { properties: {} };
  const input = value as {
    audience?: { broadcast?: boolean; targets?: unknown };
    properties?: TriggerProperties;
    schedule?: unknown;
  };
  return {
    ...(input.audience !== undefined && { audience: audienceOf(input.audience) }),
    properties: input.properties ?? {},
    ...(input.schedule !== undefined && {
      schedule: parseSchedule(input.schedule, 'schedule', 'INVALID_SCHEDULE', { localTime: true }),
    }),
  };
}
