import { isValidTimeZone } from '../lib/local-time.js';

/**
 * A project's local-time settings (rule `local-time-triggers`): which user property holds a user's
 * IANA time zone, and the zone of users without a valid one when the trigger names no
 * `fallback_time_zone`. Pure parsing, shared by the CLI (per-project values) and the trigger.
 */
export interface LocalTimeSettings {
  readonly timeZoneProperty: string;
  readonly defaultTimeZone: string;
}

export const DEFAULT_LOCAL_TIME: LocalTimeSettings = Object.freeze({
  timeZoneProperty: 'time_zone',
  defaultTimeZone: 'UTC',
});

/** What a project stores (`projects.local_time`): only the values it set. */
export interface ProjectLocalTime {
  time_zone_property?: string;
  default_time_zone?: string;
}

// A user property name as conditions accept it: 1-128 characters, no `"`, `\` or control characters.
// eslint-disable-next-line no-control-regex -- control characters are what it refuses
const PROPERTY_NAME = /^[^"\\\u0000-\u001f\u007f]{1,128}$/;

export function timeZonePropertyProblem(value: unknown): string | undefined {
  if (typeof value !== 'string' || !PROPERTY_NAME.test(value) || value.startsWith('trigger.'))
    return 'must be a user property name: 1-128 characters without ", \\ or control characters';
  return undefined;
}

export function defaultTimeZoneProblem(value: unknown): string | undefined {
  if (!isValidTimeZone(value)) return 'must be an IANA time zone name such as Europe/Paris or UTC';
  return undefined;
}

/** Reads a stored value, ignoring what is not valid (a hand-edited row cannot break a trigger). */
export function parseProjectLocalTime(stored: unknown): ProjectLocalTime {
  const out: ProjectLocalTime = {};
  if (stored === null || typeof stored !== 'object') return out;
  const { time_zone_property: property, default_time_zone: zone } = stored as Record<string, unknown>;
  if (timeZonePropertyProblem(property) === undefined) out.time_zone_property = property as string;
  if (defaultTimeZoneProblem(zone) === undefined) out.default_time_zone = zone as string;
  return out;
}

export function effectiveLocalTime(project: ProjectLocalTime): LocalTimeSettings {
  return {
    timeZoneProperty: project.time_zone_property ?? DEFAULT_LOCAL_TIME.timeZoneProperty,
    defaultTimeZone: project.default_time_zone ?? DEFAULT_LOCAL_TIME.defaultTimeZone,
  };
}
