import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import pino, { type Logger } from 'pino';
import type { Database, Db } from '../db/database.js';
import { systemClock, type Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import { claimJobs, findJob, insertJob, rescueExpiredJobs, rowToJob } from './jobs.repository.js';
import { notifyJobsEnqueued } from './job-wakeups.js';
import type { EnqueueOptions, Job, JobHandlers, JobKind, JobPayloads } from './job-types.js';
import { runClaimedJob, type JobOutcome } from './run-job.js';

/** The queue's public surface: features import from here (and `job-types.ts` for types). */
export { createJobRunner, type JobRunner, type JobRunnerOptions } from './job-runner.js';
export { AbandonJobError, RetryJobError, retryDelayMs, type RetryJobOptions } from './job-retry.js';
export type { JobOutcome } from './run-job.js';

export const DEFAULT_MAX_ATTEMPTS = 25;

/**
 * Adds a job and returns its id. Pass the transaction that writes the state the job is about: the
 * job then exists exactly when that state commits (transactional outbox, S2). On PostgreSQL the
 * commit also wakes listening workers. With `jobKey`, an unfinished job holding the key is reused.
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

export function getJob(db: Db, id: string): Promise<Job | undefined> {
  return findJob(db, id);
}

export interface RunJobsUntilIdleOptions {
  /** Decides which jobs are due and stamps the outcome; default the system clock. */
  clock?: Clock;
  logger?: Logger;
  /** Default 60 s. */
  leaseMs?: number;
  /** Guard against a handler that re-queues itself forever; default 10,000 runs. */
  maxRuns?: number;
}

export type RunJobsUntilIdleResult = Record<JobOutcome, number> & { runs: number };

/**
 * For tests: hands back expired leases, then claims and runs due jobs of the given handlers' kinds one at a time, in this process,
 * until none is due, then returns what happened. Jobs retried with a delay are not due yet, so a
 * failing job ends the loop; advance `clock` and call again to run its next attempt.
 */
export async function runJobsUntilIdle(
  db: Kysely<Database>,
  handlers: JobHandlers,
  options: RunJobsUntilIdleOptions = {},
): Promise<RunJobsUntilIdleResult> {
  const clock = options.clock ?? systemClock;
  const leaseMs = options.leaseMs ?? 60_000;
  const maxRuns = options.maxRuns ?? 10_000;
  const context = { db, logger: options.logger ?? pino({ level: 'silent' }), clock, leaseMs, handlers };
  const kinds = Object.keys(handlers);
  const lockPrefix = `run-until-idle:${process.pid}:${randomBytes(3).toString('hex')}`;
  const result: RunJobsUntilIdleResult = {
    runs: 0,
    succeeded: 0,
    retried: 0,
    failed: 0,
    dead: 0,
    released: 0,
    lost: 0,
  };
  const neverAborted = new AbortController().signal;
  for (;;) {
    await rescueExpiredJobs(db, clock.now());
    const [row] = await claimJobs(db, {
      lockToken: `${lockPrefix}/${result.runs}`,
      now: clock.now(),
      leaseMs,
      limit: 1,
      kinds,
    });
    if (!row) return result;
    if (result.runs >= maxRuns)
      throw new Error(`runJobsUntilIdle: still busy after ${maxRuns} runs (a job that re-queues itself forever?)`);
    result.runs += 1;
    result[await runClaimedJob(context, rowToJob(row), neverAborted)] += 1;
  }
}
