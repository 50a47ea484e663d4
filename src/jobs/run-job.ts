import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import { classifyDatabaseError, retryWhileDatabaseUnavailable } from '../db/database-errors.js';
import { completeJob, markJobDead, renewJobLease, rescheduleJob, type JobLock } from './jobs.repository.js';
import { notifyJobsEnqueued } from './job-wakeups.js';
import { AbandonJobError, describeJobError, retryDelayMs, RetryJobError } from './job-retry.js';
import type { Job, JobHandlers, JobHelpers } from './job-types.js';

export interface RunJobContext {
  db: Kysely<Database>;
  logger: Logger;
  clock: Clock;
  leaseMs: number;
  handlers: JobHandlers;
}

/** What became of one claimed run. `released`: handed back uncounted at shutdown; `lost`: the lease went to another worker. */
export type JobOutcome = 'succeeded' | 'retried' | 'failed' | 'dead' | 'released' | 'lost';

type AnyJobHandler = ((payload: unknown, helpers: JobHelpers) => Promise<void>) & {
  finalise?: (payload: unknown, helpers: JobHelpers) => Promise<void>;
};

/** Delay between tries of a finaliser that threw (a database blip): short, it only writes state. */
const FINALISE_RETRY_MS = 5000;

/** Delay before a run that failed because the database was out runs again (uncounted). */
const OUTAGE_RETRY_MS = 1000;

/**
 * Runs one claimed job (its `attempts` already counts this run) and records the outcome. Never
 * throws. The outcome write is retried across a database outage for as long as it lasts (a job
 * whose outcome is dropped runs again, repeating its work); only a real error, or the database
 * handle closing at shutdown, ends it unrecorded, and then the lease expiry retries the job.
 */
export async function runClaimedJob(
  ctx: RunJobContext,
  job: Job,
  shutdown: AbortSignal,
  stopping: AbortSignal = shutdown,
): Promise<JobOutcome> {
  const lock: JobLock = { id: job.id, lockedBy: job.lockedBy ?? '' };
  const logger = ctx.logger.child({ job_id: job.id, job_kind: job.kind, attempt: job.attempts });
  try {
    const handler = (ctx.handlers as Record<string, AnyJobHandler | undefined>)[job.kind];
    // Attempts spent (claimed once more after the last one failed or lost its worker): finalise only.
    const finalising = job.attempts > job.maxAttempts;
    const run = finalising ? handler?.finalise : handler;
    if (finalising && !run) {
      return (await markJobDead(ctx.db, lock, job.lastError ?? 'attempts exhausted', ctx.clock.now()))
        ? 'dead'
        : 'lost';
    }
    const controller = new AbortController();
    const lease = keepLease(ctx, lock, controller, logger);
    // At shutdown the runner stops waiting: stop renewing too, so an unresponsive handler's lease expires.
    const onShutdown = () => {
      lease.stop();
      controller.abort(new Error('worker is shutting down'));
    };
    shutdown.addEventListener('abort', onShutdown, { once: true });
    if (shutdown.aborted) onShutdown();
    let error: unknown;
    let failed = false;
    try {
      if (!run) throw new Error(`no handler for job kind ${job.kind}`);
      await run(job.payload, {
        db: ctx.db,
        logger,
        jobId: job.id,
        attempt: Math.min(job.attempts, job.maxAttempts),
        maxAttempts: job.maxAttempts,
        signal: controller.signal,
        stopping,
      });
    } catch (caught) {
      error = caught;
      failed = true;
    } finally {
      lease.stop();
      shutdown.removeEventListener('abort', onShutdown);
    }
    if (lease.lost) {
      logger.warn('job lease was lost while running; another worker owns the job now');
      return 'lost';
    }
    const handedBack =
      (shutdown.aborted && controller.signal.aborted) || (stopping.aborted && !(error instanceof RetryJobError));
    // Written once the database takes it: each write matches the claim's lock token, so one that
    // lands after the lease passed to another worker changes nothing ('lost').
    return await retryWhileDatabaseUnavailable(
      () =>
        finalising
          ? recordFinalisation(ctx, job, lock, logger, failed, error)
          : recordOutcome(ctx, job, lock, logger, failed, error, handedBack, handler?.finalise !== undefined),
      {
        onRetry: (storeError, delayMs) =>
          logger.warn({ err: storeError, retry_in_ms: delayMs }, 'recording the job outcome failed; retrying'),
      },
    );
  } catch (storeError) {
    if (shutdown.aborted)
      logger.warn({ err: storeError }, 'job outcome not recorded at shutdown; the worker hands its lease back');
    else
      logger.error({ err: storeError }, 'could not record the job outcome; the job runs again after its lease expires');
    return 'lost';
  }
}

async function recordFinalisation(
  ctx: RunJobContext,
  job: Job,
  lock: JobLock,
  logger: Logger,
  failed: boolean,
  error: unknown,
): Promise<JobOutcome> {
  const now = ctx.clock.now();
  if (failed) {
    logger.warn({ err: error, retry_in_ms: FINALISE_RETRY_MS }, 'finalising the job failed; trying again');
    return (await rescheduleJob(ctx.db, lock, { runAt: now + FINALISE_RETRY_MS, attempts: job.attempts - 1, now }))
      ? 'failed'
      : 'lost';
  }
  logger.error({ last_error: job.lastError }, 'job spent its attempts and was finalised; it is dead');
  return (await markJobDead(ctx.db, lock, job.lastError ?? 'attempts exhausted', now)) ? 'dead' : 'lost';
}

async function recordOutcome(
  ctx: RunJobContext,
  job: Job,
  lock: JobLock,
  logger: Logger,
  failed: boolean,
  error: unknown,
  shuttingDown: boolean,
  hasFinaliser: boolean,
): Promise<JobOutcome> {
  const now = ctx.clock.now();
  const stillOurs = (ok: boolean, outcome: JobOutcome): JobOutcome => (ok ? outcome : 'lost');
  if (!failed) return stillOurs(await completeJob(ctx.db, lock, now), 'succeeded');
  if (shuttingDown) {
    // Aborted by our own shutdown: hand the job back at once, without spending an attempt.
    logger.info('job handed back at shutdown');
    const released = await rescheduleJob(ctx.db, lock, { runAt: now, attempts: job.attempts - 1, now });
    // Wake the other workers now (PostgreSQL), so one resumes the job without waiting for its poll.
    if (released) await notifyJobsEnqueued(ctx.db).catch(() => undefined);
    return stillOurs(released, 'released');
  }
  if (classifyDatabaseError(error) !== undefined) {
    // The database was out (or the transaction lost a conflict): not the job's failure, so no attempt is spent.
    logger.warn({ err: error, retry_in_ms: OUTAGE_RETRY_MS }, 'job run failed on the database; retrying uncounted');
    return stillOurs(
      await rescheduleJob(ctx.db, lock, { runAt: now + OUTAGE_RETRY_MS, attempts: job.attempts - 1, now }),
      'retried',
    );
  }
  if (error instanceof RetryJobError && !error.countAsAttempt) {
    const runAt = now + (error.delayMs ?? 0);
    return stillOurs(
      await rescheduleJob(ctx.db, lock, { runAt, attempts: job.attempts - 1, payload: error.payload, now }),
      'retried',
    );
  }
  const message = describeJobError(error);
  const payload: unknown =
    error instanceof RetryJobError || error instanceof AbandonJobError ? error.payload : undefined;
  const last = job.attempts >= job.maxAttempts || error instanceof AbandonJobError;
  if (last && hasFinaliser) {
    // Claimed once more (attempts then exceed the maximum), that run calls the handler's finaliser.
    logger.error({ err: error }, 'job failed its last attempt; finalising it');
    return stillOurs(
      await rescheduleJob(ctx.db, lock, { runAt: now, attempts: job.maxAttempts, payload, lastError: message, now }),
      'failed',
    );
  }
  if (last) {
    logger.error({ err: error }, 'job failed its last attempt and is dead');
    return stillOurs(await markJobDead(ctx.db, lock, message, now, payload), 'dead');
  }
  const delay =
    error instanceof RetryJobError && error.delayMs !== undefined ? error.delayMs : retryDelayMs(job.attempts);
  logger.warn({ err: error, retry_in_ms: delay }, 'job attempt failed');
  return stillOurs(
    await rescheduleJob(ctx.db, lock, { runAt: now + delay, attempts: job.attempts, payload, lastError: message, now }),
    'failed',
  );
}

/**
 * Renews the lease every third of its length while the handler runs, so long jobs keep it. When
 * the renewal finds the job taken (or the lease ran out while the database was unreachable) the
 * handler's signal aborts: it no longer owns the job and should stop.
 */
function keepLease(
  ctx: RunJobContext,
  lock: JobLock,
  controller: AbortController,
  logger: Logger,
): { lost: boolean; stop(): void } {
  let lockedUntil = ctx.clock.now() + ctx.leaseMs;
  let renewing = false;
  const state = {
    lost: false,
    stop: () => clearInterval(timer),
  };
  const loseLease = () => {
    state.lost = true;
    state.stop();
    controller.abort(new Error('job lease lost'));
  };
  const timer = setInterval(
    () => {
      if (renewing) return;
      renewing = true;
      const now = ctx.clock.now();
      renewJobLease(ctx.db, lock, now + ctx.leaseMs, now)
        .then((ours) => (ours ? (lockedUntil = now + ctx.leaseMs) : loseLease()))
        .catch((error: unknown) => {
          logger.warn({ err: error }, 'could not renew the job lease');
          if (ctx.clock.now() >= lockedUntil) loseLease();
        })
        .finally(() => (renewing = false));
    },
    Math.max(1, Math.floor(ctx.leaseMs / 3)),
  );
  return state;
}
