import { AppError } from '../errors.js';
import type { TriggerProperties } from './conditions/resolve-trigger-refs.js';
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

export const MAX_TARGETS = 1000;
const MAX_PROPERTIES = 256;
const TARGET_KEYS: readonly TargetKey[] = ['project_user_id', 'device_id', 'user_id'];
// eslint-disable-next-line no-control-regex -- the pattern exists to refuse control characters
const ID_PATTERN = /^[^\u0000-\u001f\u007f-\u009f]{1,255}$/u;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * An audience as a trigger body or a campaign's `default_audience` gives it. `broadcast: true` wins
 * and `targets` is then ignored, as rule `trigger-body` says; otherwise 1 to 1,000 targets, each holding
 * exactly one of `project_user_id`, `device_id`, `user_id` (rule `trigger-body`).
 */
export function parseAudience(input: unknown, path: string, code: string): Audience {
  const fail = (problem: string): never => {
    throw new AppError('invalid', code, `${path}${problem}`);
  };
  if (!isObject(input)) return fail(': expected an object');
  const extra = Object.keys(input).find((k) => k !== 'broadcast' && k !== 'targets');
  if (extra !== undefined) fail(`: unexpected field "${extra}"`);
  if (input.broadcast !== undefined && typeof input.broadcast !== 'boolean') fail('.broadcast: expected a boolean');
  if (input.broadcast === true) return { broadcast: true };
  if (input.targets === undefined) return fail(': give broadcast: true or targets');
  if (!Array.isArray(input.targets) || input.targets.length === 0 || input.targets.length > MAX_TARGETS)
    fail(`.targets: expected an array of 1 to ${MAX_TARGETS} targets`);
  const targets = (input.targets as unknown[]).map((target, i) => {
    const where = `.targets[${i}]`;
    if (!isObject(target)) return fail(`${where}: expected an object`);
    const keys = Object.keys(target);
    if (keys.length !== 1 || !TARGET_KEYS.includes(keys[0] as TargetKey))
      fail(`${where}: a target holds exactly one of project_user_id, device_id or user_id`);
    const key = keys[0] as TargetKey;
    const id = target[key];
    if (typeof id !== 'string' || !ID_PATTERN.test(id))
      fail(`${where}.${key}: expected 1 to 255 characters without control characters`);
    return { [key]: id } as Target;
  });
  return { targets };
}

/** Rule `trigger-body`: flat values only (string, number or boolean), at most 256 keys. */
export function parseTriggerProperties(input: unknown, path: string, code: string): TriggerProperties {
  if (input === undefined) return {};
  const fail = (problem: string): never => {
    throw new AppError('invalid', code, `${path}${problem}`);
  };
  if (!isObject(input)) return fail(': expected an object');
  const entries = Object.entries(input);
  if (entries.length > MAX_PROPERTIES) fail(`: at most ${MAX_PROPERTIES} properties`);
  const out: TriggerProperties = {};
  for (const [key, value] of entries) {
    if (key.length === 0 || key.length > 128) fail(`: property names are 1 to 128 characters`);
    const ok =
      typeof value === 'boolean' ||
      (typeof value === 'number' && Number.isFinite(value)) ||
      (typeof value === 'string' && value.length <= 8192);
    if (!ok) fail(`.${key}: values are strings (up to 8 KiB), numbers or booleans`);
    out[key] = value as string | number | boolean;
  }
  return out;
}

/** The trigger body (whole body optional): `{audience?, properties?, schedule?}`; anything else is malformed. */
export function parseTriggerBody(body: unknown): TriggerInput {
  const code = 'INVALID_TRIGGER_BODY';
  if (body === undefined || body === null) return { properties: {} };
  if (!isObject(body)) throw new AppError('invalid', code, 'The body must be a JSON object');
  const extra = Object.keys(body).find((k) => k !== 'audience' && k !== 'properties' && k !== 'schedule');
  if (extra !== undefined) throw new AppError('invalid', code, `Unexpected field "${extra}"`);
  const properties = parseTriggerProperties(body.properties, 'properties', code);
  return {
    ...(body.audience !== undefined && { audience: parseAudience(body.audience, 'audience', code) }),
    properties,
    ...(body.schedule !== undefined && { schedule: parseSchedule(body.schedule, 'schedule', 'INVALID_SCHEDULE') }),
  };
}
