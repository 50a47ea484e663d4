import type { Db } from '../db/database.js';
import { systemClock, type Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import { findJob, insertJob, moveKeyedJob, unfinishedJobKeyExists, withdrawKeyedJob } from './jobs.repository.js';
import { notifyJobsEnqueued } from './job-wakeups.js';
import type { EnqueueOptions, Job, JobKind, JobPayloads } from './job-types.js';

/** The queue's public surface: features import from here (and `job-types.ts` for types). */
export { createJobRunner, type JobRunner, type JobRunnerOptions } from './job-runner.js';
export { AbandonJobError, RetryJobError, retryDelayMs, type RetryJobOptions } from './job-retry.js';
export type { JobOutcome } from './run-job.js';

export const DEFAULT_MAX_ATTEMPTS = 25;

/**
 * Adds a job and returns its id. Pass the transaction that writes the state the job is about: the
 * job then exists exactly when that state commits (a transactional outbox, rule
 * `transactional-jobs`). On PostgreSQL the commit also wakes listening workers. With `jobKey`, an
 * unfinished job holding the key is reused.
 */
export async function enqueueJob<K extends JobKind>(
  db: Db,
  kind: K,
  payload: JobPayloads[K],
  options: EnqueueOptions = {},
): Promise<string> {
  const now = (options.clock ?? systemClock).now();
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1)
    throw new RangeError(`maxAttempts must be an integer >= 1, got ${maxAttempts}`);
  if (options.runAt !== undefined && !Number.isFinite(options.runAt))
    throw new RangeError('runAt must be epoch milliseconds');
  const result = await insertJob(db, {
    id: newId(),
    kind,
    payload,
    runAt: Math.round(options.runAt ?? now),
    maxAttempts,
    jobKey: options.jobKey ?? null,
    now,
  });
  if (result.inserted) await notifyJobsEnqueued(db);
  return result.id;
}

/**
 * `enqueueJob` with `jobKey` for a key usually taken already (many writers enqueueing one keyed job):
 * one read when an unfinished job holds the key, the insert only when none does. Returns whether
 * the read found one.
 */
export async function ensureKeyedJob<K extends JobKind>(
  db: Db,
  kind: K,
  payload: JobPayloads[K],
  options: EnqueueOptions & { jobKey: string },
): Promise<boolean> {
  if (await unfinishedJobKeyExists(db, options.jobKey)) return true;
  await enqueueJob(db, kind, payload, options);
  return false;
}

export function getJob(db: Db, id: string): Promise<Job | undefined> {
  return findJob(db, id);
}

/**
 * Moves the pending job holding `jobKey` to `runAt` (workers are woken when it moved earlier).
 * False when no job with the key is pending: it is running (its handler must check its own state)
 * or done.
 */
export async function moveJob(
  db: Db,
  jobKey: string,
  runAt: number,
  options: { clock?: Clock } = {},
): Promise<boolean> {
  const moved = await moveKeyedJob(db, jobKey, Math.round(runAt), (options.clock ?? systemClock).now());
  if (moved) await notifyJobsEnqueued(db);
  return moved;
}

/** Withdraws the pending job holding `jobKey`; false when none is pending. */
export function withdrawJob(db: Db, jobKey: string): Promise<boolean> {
  return withdrawKeyedJob(db, jobKey);
}
