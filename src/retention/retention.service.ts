import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import {
  effectiveDays,
  parseProjectRetention,
  RETENTION_KINDS,
  retentionDaysProblem,
  type ProjectRetention,
  type RetentionDays,
  type RetentionKind,
} from '../settings/retention-settings.js';
import { findProjectRetention, storeProjectRetention } from './retention.repository.js';

/** Per-project retention overrides, as the CLI manages them. */
export interface ShownRetention {
  /** Days rows are kept (0: forever). */
  days: number;
  source: 'default' | 'project';
}

async function requireOverrides(db: Db, projectId: string): Promise<ProjectRetention> {
  const row = await findProjectRetention(db, projectId);
  if (!row) throw new AppError('not_found', 'PROJECT_NOT_FOUND', `Project ${projectId} does not exist`);
  return parseProjectRetention(row.retention);
}

/** The retention in force for each kind, and whether the project's own setting decides it. */
export async function showProjectRetention(
  db: Db,
  defaults: RetentionDays,
  projectId: string,
): Promise<Record<RetentionKind, ShownRetention>> {
  const own = await requireOverrides(db, projectId);
  const shown = {} as Record<RetentionKind, ShownRetention>;
  for (const kind of RETENTION_KINDS) {
    const days = effectiveDays(defaults, own, kind);
    shown[kind] = { days, source: own[kind] !== undefined && days === own[kind] ? 'project' : 'default' };
  }
  return shown;
}

/**
 * Sets some kinds' overrides (`null` removes one). A value longer than the operator's default is
 * refused: on PostgreSQL whole partitions go at the default, so it could not be kept.
 */
export async function setProjectRetention(
  db: Db,
  defaults: RetentionDays,
  projectId: string,
  changes: Partial<Record<RetentionKind, number | null>>,
): Promise<ProjectRetention> {
  const own = await requireOverrides(db, projectId);
  for (const kind of RETENTION_KINDS) {
    const value = changes[kind];
    if (value === undefined) continue;
    if (value === null) {
      delete own[kind];
      continue;
    }
    const problem = retentionDaysProblem(value);
    if (problem) throw new AppError('invalid', 'INVALID_RETENTION', `${kind}: ${problem}, got ${value}`);
    if (defaults[kind] !== 0 && value > defaults[kind])
      throw new AppError(
        'invalid',
        'INVALID_RETENTION',
        `${kind}: a project may keep rows at most the operator's ${defaults[kind]} days, got ${value}`,
      );
    own[kind] = value;
  }
  await storeProjectRetention(db, projectId, Object.keys(own).length > 0 ? own : null);
  return own;
}
