import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import pino, { type Logger } from 'pino';
import type { Database } from '../../src/db/database.js';
import { systemClock, type Clock } from '../../src/lib/clock.js';
import { claimJobs, rescueExpiredJobs, rowToJob } from '../../src/jobs/jobs.repository.js';
import type { JobHandlers } from '../../src/jobs/job-types.js';
import { runClaimedJob, type JobOutcome } from '../../src/jobs/run-job.js';

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
 * Hands back expired leases, then claims and runs due jobs of the given handlers' kinds one at a time, in this process,
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
