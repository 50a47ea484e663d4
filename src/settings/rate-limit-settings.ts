/**
 * Limits per class (rule `rate-limits`): a token bucket that refills `perSecond` tokens a second up
 * to `burst`. Pure parsing and validation, shared by config (`RATE_LIMIT_DEFAULTS`), the limiter
 * (stored per-project overrides) and the CLI.
 */
export const RATE_LIMIT_CLASSES = ['management', 'client', 'send', 'trigger', 'a2a'] as const;

/** A route's class (`config.rateLimitClass`); `client`: every public-key request (devices, events), whatever the route's own class. */
export type RateLimitClass = (typeof RATE_LIMIT_CLASSES)[number];

export interface ClassLimit {
  perSecond: number;
  burst: number;
}

export type RateLimits = Readonly<Record<RateLimitClass, ClassLimit>>;

/**
 * Defaults per project. `client` carries the public-key traffic of every app user (devices,
 * events), so it is generous, and it is a bucket of its own: an app's users (or whoever copied the
 * public key out of the app) can never use up the secret key's `management` calls. A `send` request
 * may carry up to 500 notifications and a `trigger` may fan out to a whole audience, so those are
 * tighter.
 */
export const DEFAULT_RATE_LIMITS: RateLimits = Object.freeze({
  management: { perSecond: 1000, burst: 2000 },
  client: { perSecond: 1000, burst: 2000 },
  send: { perSecond: 20, burst: 100 },
  trigger: { perSecond: 10, burst: 50 },
  a2a: { perSecond: 50, burst: 100 },
});

export const PER_SECOND_RANGE = { min: 0.001, max: 1_000_000 } as const;
export const BURST_RANGE = { min: 1, max: 10_000_000 } as const;

export function isRateLimitClass(value: string): value is RateLimitClass {
  return (RATE_LIMIT_CLASSES as readonly string[]).includes(value);
}

/** Problems with a limit, as sentences; empty when it is valid. */
export function limitProblems(limit: { perSecond: number; burst: number }): string[] {
  const problems: string[] = [];
  if (
    !Number.isFinite(limit.perSecond) ||
    limit.perSecond < PER_SECOND_RANGE.min ||
    limit.perSecond > PER_SECOND_RANGE.max
  ) {
    problems.push(
      `per-second must be a number from ${PER_SECOND_RANGE.min} to ${PER_SECOND_RANGE.max}, got ${limit.perSecond}`,
    );
  }
  if (!Number.isInteger(limit.burst) || limit.burst < BURST_RANGE.min || limit.burst > BURST_RANGE.max) {
    problems.push(`burst must be a whole number from ${BURST_RANGE.min} to ${BURST_RANGE.max}, got ${limit.burst}`);
  }
  return problems;
}

/** The burst used when none is given: one second's worth of requests, at least 1. */
export const defaultBurstFor = (perSecond: number): number => Math.max(1, Math.ceil(perSecond));

/**
 * Parses `RATE_LIMIT_DEFAULTS`, e.g. `send=50/200,trigger=5`: `class=perSecond[/burst]`, the burst
 * defaulting to one second's worth. Classes not named keep the built-in defaults.
 */
export function parseRateLimitDefaults(raw: string | undefined, problems: string[]): RateLimits {
  if (raw === undefined) return DEFAULT_RATE_LIMITS;
  const limits: Record<RateLimitClass, ClassLimit> = { ...DEFAULT_RATE_LIMITS };
  for (const part of raw
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')) {
    const match = /^([a-z0-9]+)=([^/]+)(?:\/(.+))?$/.exec(part);
    if (!match) {
      problems.push(`RATE_LIMIT_DEFAULTS entries must look like class=perSecond[/burst], got "${part}"`);
      continue;
    }
    const cls = match[1]!;
    const burstText = match[3];
    if (!isRateLimitClass(cls)) {
      problems.push(`RATE_LIMIT_DEFAULTS: unknown class "${cls}" (use ${RATE_LIMIT_CLASSES.join(', ')})`);
      continue;
    }
    const perSecond = Number(match[2]);
    const limit = { perSecond, burst: burstText === undefined ? defaultBurstFor(perSecond) : Number(burstText) };
    const found = limitProblems(limit);
    if (found.length > 0) problems.push(...found.map((p) => `RATE_LIMIT_DEFAULTS ${cls}: ${p}`));
    else limits[cls] = limit;
  }
  return Object.freeze(limits);
}

/** Stored shape of one override in `projects.rate_limits`: `{"send": {"per_second": 50, "burst": 200}}`. */
export interface StoredClassLimit {
  per_second: number;
  burst: number;
}

/** Reads the stored overrides leniently: an entry that is not a valid limit is ignored. */
export function readOverrides(
  stored: Record<string, unknown> | null | undefined,
): Partial<Record<RateLimitClass, ClassLimit>> {
  const overrides: Partial<Record<RateLimitClass, ClassLimit>> = {};
  if (stored === null || stored === undefined || typeof stored !== 'object') return overrides;
  for (const cls of RATE_LIMIT_CLASSES) {
    const entry = stored[cls] as Partial<StoredClassLimit> | undefined;
    if (entry === null || typeof entry !== 'object') continue;
    const limit = { perSecond: Number(entry.per_second), burst: Number(entry.burst) };
    if (limitProblems(limit).length === 0) overrides[cls] = limit;
  }
  return overrides;
}

export function toStored(limit: ClassLimit): StoredClassLimit {
  return { per_second: limit.perSecond, burst: limit.burst };
}
