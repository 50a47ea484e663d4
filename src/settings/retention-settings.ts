import { DAY_MS } from '../lib/clock.js';

/**
 * How long rows are kept, per kind of data. Pure parsing and arithmetic, shared by config (the
 * operator's defaults), the retention job and the CLI (per-project overrides). `0` days keeps forever.
 */
export const RETENTION_KINDS = ['deliveries', 'events', 'tasks'] as const;
export type RetentionKind = (typeof RETENTION_KINDS)[number];

export type RetentionDays = Readonly<Record<RetentionKind, number>>;

export const DEFAULT_RETENTION_DAYS: RetentionDays = Object.freeze({ deliveries: 30, events: 90, tasks: 7 });

/** Longest retention a setting may name (100 years): beyond it, 0 (forever) says it better. */
export const MAX_RETENTION_DAYS = 36_500;

export interface RetentionSettings {
  readonly days: RetentionDays;
  /** Rows per delete statement: each statement holds its locks only this long. */
  readonly chunkRows: number;
  /** How often workers enqueue the retention job. */
  readonly intervalMs: number;
  /** PostgreSQL: daily partitions kept ready ahead of today. */
  readonly partitionsAheadDays: number;
}

/** A project's own settings: a kind it names is kept for that many days, never longer than the operator's default. */
export type ProjectRetention = Partial<Record<RetentionKind, number>>;

/** A problem with a stored or supplied per-project value, or undefined when it is fine. */
export function retentionDaysProblem(value: unknown): string | undefined {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_RETENTION_DAYS)
    return `must be a whole number of days from 1 to ${MAX_RETENTION_DAYS}`;
  return undefined;
}

/** Reads a stored override, ignoring what is not a valid setting (a hand-edited row cannot stop the job). */
export function parseProjectRetention(stored: unknown): ProjectRetention {
  const out: ProjectRetention = {};
  if (stored === null || typeof stored !== 'object') return out;
  for (const kind of RETENTION_KINDS) {
    const value = (stored as Record<string, unknown>)[kind];
    if (retentionDaysProblem(value) === undefined) out[kind] = value as number;
  }
  return out;
}

/**
 * Days a project's rows of `kind` are kept. A project may only shorten the operator's default: on
 * PostgreSQL whole daily partitions are dropped at the default, so a longer override could not be kept.
 * With the default at 0 (forever) the project's own value applies.
 */
export function effectiveDays(defaults: RetentionDays, project: ProjectRetention, kind: RetentionKind): number {
  const own = project[kind];
  if (own === undefined) return defaults[kind];
  return defaults[kind] === 0 ? own : Math.min(own, defaults[kind]);
}

/** Rows of `kind` stamped before this instant are expired; undefined when they are kept forever. */
export function cutoffFor(now: number, days: number): number | undefined {
  return days === 0 ? undefined : now - days * DAY_MS;
}
