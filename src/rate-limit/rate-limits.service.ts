import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import { findProject, setProjectRateLimits } from '../projects/projects.service.js';
import {
  defaultBurstFor,
  isRateLimitClass,
  limitProblems,
  RATE_LIMIT_CLASSES,
  readOverrides,
  toStored,
  type ClassLimit,
  type RateLimitClass,
  type RateLimits,
} from '../settings/rate-limit-settings.js';

/** Per-project overrides of the rate limits (rule `rate-limits`), as the CLI manages them. */
export interface EffectiveLimit {
  per_second: number;
  burst: number;
  source: 'default' | 'project';
}

async function requireProject(db: Db, projectId: string) {
  const project = await findProject(db, projectId);
  if (!project) throw new AppError('not_found', 'PROJECT_NOT_FOUND', `Project ${projectId} does not exist`);
  return project;
}

export function parseRateLimitClass(value: string): RateLimitClass {
  if (!isRateLimitClass(value)) {
    throw new AppError(
      'invalid',
      'INVALID_RATE_LIMIT_CLASS',
      `class must be one of ${RATE_LIMIT_CLASSES.join(', ')}, got "${value}"`,
    );
  }
  return value;
}

/** The limits in force for every class, and whether each comes from the defaults or the project. */
export async function showProjectRateLimits(
  db: Db,
  defaults: RateLimits,
  projectId: string,
): Promise<Record<RateLimitClass, EffectiveLimit>> {
  const overrides = readOverrides((await requireProject(db, projectId)).rateLimits);
  const shown = {} as Record<RateLimitClass, EffectiveLimit>;
  for (const cls of RATE_LIMIT_CLASSES) {
    const override = overrides[cls];
    const limit = override ?? defaults[cls];
    shown[cls] = { per_second: limit.perSecond, burst: limit.burst, source: override ? 'project' : 'default' };
  }
  return shown;
}

/** Sets one class's override; the burst defaults to one second's worth of requests. */
export async function setProjectRateLimit(
  db: Db,
  projectId: string,
  cls: string,
  perSecond: number,
  burst?: number,
): Promise<ClassLimit> {
  const rateClass = parseRateLimitClass(cls);
  const limit = { perSecond, burst: burst ?? defaultBurstFor(perSecond) };
  const problems = limitProblems(limit);
  if (problems.length > 0) throw new AppError('invalid', 'INVALID_RATE_LIMIT', problems.join('; '));
  const project = await requireProject(db, projectId);
  await setProjectRateLimits(db, projectId, { ...(project.rateLimits ?? {}), [rateClass]: toStored(limit) });
  return limit;
}

/** Drops the override of one class, or of every class: the defaults apply again. */
export async function resetProjectRateLimits(db: Db, projectId: string, cls?: string): Promise<void> {
  const rateClass = cls === undefined ? undefined : parseRateLimitClass(cls);
  const project = await requireProject(db, projectId);
  if (rateClass === undefined) {
    await setProjectRateLimits(db, projectId, null);
    return;
  }
  const rest = Object.fromEntries(Object.entries(project.rateLimits ?? {}).filter(([key]) => key !== rateClass));
  await setProjectRateLimits(db, projectId, Object.keys(rest).length > 0 ? rest : null);
}
