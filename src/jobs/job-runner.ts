import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import { systemClock, type Clock } from '../lib/clock.js';
import {
  claimJobs,
  deleteFinishedJobs,
  releaseJobs,
  rescueExpiredJobs,
  rowToJob,
  type JobLock,
} from './jobs.repository.js';
import type { Job, JobHandlers } from './job-types.js';
import { listenForJobWakeups, listenForLocalJobWakeups, notifyJobsEnqueued, type JobWakeups } from './job-wakeups.js';
import { runClaimedJob, type RunJobContext } from './run-job.js';
import { backoffMs } from '../lib/retry-delay.js';

export interface JobRunnerOptions {
  db: Kysely<Database>;
  /**
   * PostgreSQL only: one client of it LISTENs for enqueue NOTIFYs, so jobs start without waiting
   * for a poll. Absent on PostgreSQL (behind a pooler without DATABASE_LISTEN_URL): polling only.
   */
  listenPool?: pg.Pool | undefined;
  logger: Logger;
  clock?: Clock;
  handlers: JobHandlers;
  /** Most jobs run at once (`JOB_CONCURRENCY`). */
  concurrency: number;
  /** How often to look for due jobs without a wake-up (`JOB_POLL_INTERVAL_MS`). */
  pollIntervalMs: number;
  /** How long a claim owns a job before another worker may take it (`JOB_LEASE_MS`); renewed every third of it. */
  leaseMs: number;
  /**
   * How long `stop()` waits for running jobs before aborting their signals; default 10 s. Jobs are
   * asked to stop at a safe point at once (`helpers.stopping`) and hand themselves back, so this only
   * bounds handlers that do not listen, and work under way that takes longer (sends at a slow
   * provider). A job still running a second after the abort has its lease released for it.
   */
  drainTimeoutMs?: number;
  /** Succeeded jobs are deleted after this long (default 1 h), dead ones after `deadRetentionMs` (default 7 days). */
  succeededRetentionMs?: number;
  deadRetentionMs?: number;
  /** How often finished jobs are cleaned up; default 60 s. */
  cleanupIntervalMs?: number;
  workerId?: string;
}

export interface JobRunner {
  readonly workerId: string;
  /** Starts claiming (and, on PostgreSQL, listening); resolves once the first listen attempt is made. */
  start(): Promise<void>;
  /**
   * Stops claiming and waits for running jobs (bounded by `drainTimeoutMs`), aborts those still
   * running, and before it resolves hands back the lease of every job that has not handed itself
   * back: another worker (or this one restarted) resumes them at once.
   */
  stop(): Promise<void>;
  /**
   * Aborts every running job and releases the leases this worker still holds, now: the last step of
   * `stop()`, and what a process does at its shutdown deadline before it exits. It stops claiming first,
   * so a job it hands back is not claimed again by this worker. Resolves with how many leases were
   * released (0 when the database did not answer: they then expire).
   */
  handBack(): Promise<number>;
}

const MAX_ERROR_BACKOFF_MS = 30_000;
const ABORT_GRACE_MS = 1000;
const CLEANUP_ROWS = 1000;

export function createJobRunner(options: JobRunnerOptions): JobRunner {
  const clock = options.clock ?? systemClock;
  const workerId = options.workerId ?? `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const logger = options.logger.child({ worker_id: workerId });
  const kinds = Object.keys(options.handlers);
  const context: RunJobContext = {
    db: options.db,
    logger,
    clock,
    leaseMs: options.leaseMs,
    handlers: options.handlers,
  };
  // `stopping` asks running jobs to stop at a safe point as soon as stop() is called; `shutdown`
  // aborts them outright once the drain time is over.
  const stopping = new AbortController();
  const shutdown = new AbortController();
  // Each running job's claim, so the leases of jobs that do not end in time can be handed back for them.
  const running = new Map<Promise<unknown>, JobLock>();
  let state: 'idle' | 'running' | 'stopping' | 'stopped' = 'idle';
  let pollTimer: NodeJS.Timeout | undefined;
  let cleanupTimer: NodeJS.Timeout | undefined;
  let claiming: Promise<void> | undefined;
  let wakeRequested = false;
  let claimFailures = 0;
  let claimSeq = 0;
  let lastRescueAt = Number.NEGATIVE_INFINITY;
  let wakeups: JobWakeups | undefined;
  // Set by handBack(): the NOTIFY it sends must not make this worker claim what it just released.
  let claimsClosed = false;

  /** Claims now, unless a claim is under way (then once more right after it). */
  const claimNow = () => {
    if (state !== 'running' || claimsClosed) return;
    if (claiming) {
      wakeRequested = true;
      return;
    }
    clearTimeout(pollTimer);
    claiming = claimAndRun().finally(() => (claiming = undefined));
  };

  /** A hint that jobs may be claimable (a NOTIFY, a free slot). Ignored while the database is failing, so the backoff holds. */
  const wake = () => {
    if (claimFailures === 0) claimNow();
  };

  const schedule = (delayMs: number) => {
    clearTimeout(pollTimer);
    if (state === 'running') pollTimer = setTimeout(claimNow, delayMs);
  };

  async function claimAndRun(): Promise<void> {
    wakeRequested = false;
    let nextPollMs = options.pollIntervalMs;
    try {
      const free = options.concurrency - running.size;
      if (free > 0 && kinds.length > 0) {
        claimSeq += 1;
        const now = clock.now();
        // Expired leases are looked for once per poll interval, not on every wake-up.
        if (now - lastRescueAt >= options.pollIntervalMs) {
          const rescued = await rescueExpiredJobs(options.db, now);
          lastRescueAt = now;
          if (rescued > 0)
            logger.warn({ jobs: rescued }, 'handed back jobs whose lease expired (their worker was lost)');
        }
        const rows = await claimJobs(options.db, {
          lockToken: `${workerId}/${claimSeq}`,
          now,
          leaseMs: options.leaseMs,
          limit: free,
          kinds,
        });
        claimFailures = 0;
        for (const row of rows) track(rowToJob(row));
      }
    } catch (error) {
      // Database unreachable: back off (poll interval doubling to 30 s) instead of spinning.
      claimFailures += 1;
      nextPollMs = backoffMs(claimFailures + 1, { baseMs: options.pollIntervalMs, capMs: MAX_ERROR_BACKOFF_MS });
      logger.warn({ err: error, retry_in_ms: nextPollMs }, 'claiming jobs failed');
    }
    // A wake-up that came in while claiming may be about jobs this claim did not see.
    if (wakeRequested && claimFailures === 0) setImmediate(wake);
    else schedule(nextPollMs);
  }

  function track(job: Job): void {
    const run = runClaimedJob(context, job, shutdown.signal, stopping.signal)
      .then((outcome) => {
        logger.debug({ job_id: job.id, job_kind: job.kind, outcome }, 'job run finished');
        // Its outcome was written, so the database answers again: end a claim backoff left by an outage.
        if (outcome !== 'lost') claimFailures = 0;
      })
      .catch((error: unknown) => logger.error({ err: error, job_id: job.id }, 'job run crashed'))
      .finally(() => {
        running.delete(run);
        wake(); // a slot is free
      });
    running.set(run, { id: job.id, lockedBy: job.lockedBy ?? '' });
  }

  /** Releases the leases of the jobs still running, once; their late outcome writes then match nothing. */
  let handingBack: Promise<number> | undefined;
  const handBack = (): Promise<number> => {
    shutdown.abort();
    claimsClosed = true;
    clearTimeout(pollTimer);
    handingBack ??= (async () => {
      await claiming; // the jobs a claim under way takes are handed back too
      const locks = [...running.values()];
      if (locks.length === 0) return 0;
      try {
        const released = await releaseJobs(options.db, locks, clock.now());
        if (released > 0) {
          logger.warn({ jobs: released }, 'handed back the leases of jobs still running at shutdown');
          await notifyJobsEnqueued(options.db).catch(() => undefined);
        }
        return released;
      } catch (error) {
        logger.error(
          { err: error, jobs: locks.length },
          'could not hand back the leases of jobs still running at shutdown; they run again after their lease expires',
        );
        return 0;
      }
    })();
    return handingBack;
  };

  async function cleanup(): Promise<void> {
    const now = clock.now();
    try {
      let deleted = 0;
      // A few deletes per round bound the work; a large backlog shrinks over several rounds.
      for (let round = 0; round < 10; round += 1) {
        const count = await deleteFinishedJobs(
          options.db,
          now - (options.succeededRetentionMs ?? 3_600_000),
          now - (options.deadRetentionMs ?? 7 * 86_400_000),
          CLEANUP_ROWS,
        );
        deleted += count;
        if (count < CLEANUP_ROWS || state !== 'running') break;
      }
      if (deleted > 0) logger.debug({ deleted }, 'deleted finished jobs');
    } catch (error) {
      logger.warn({ err: error }, 'deleting finished jobs failed');
    }
  }

  return {
    workerId,
    async start() {
      if (state !== 'idle') return;
      state = 'running';
      if (options.listenPool && kinds.length > 0) wakeups = await listenForJobWakeups(options.listenPool, logger, wake);
      else if (kinds.length > 0) wakeups = listenForLocalJobWakeups(options.db, wake);
      if (state !== 'running') {
        wakeups?.close(); // stop() came while the listener was connecting
        return;
      }
      let cleaning = false;
      cleanupTimer = setInterval(() => {
        if (cleaning) return;
        cleaning = true;
        void cleanup().finally(() => (cleaning = false));
      }, options.cleanupIntervalMs ?? 60_000);
      claimNow();
      logger.info({ kinds, concurrency: options.concurrency }, 'job runner started');
    },

    async stop() {
      if (state === 'stopping' || state === 'stopped') return;
      state = 'stopping';
      clearTimeout(pollTimer);
      clearInterval(cleanupTimer);
      wakeups?.close();
      stopping.abort(new Error('worker is shutting down'));
      await claiming; // jobs it claims join `running` and are drained below
      if (!(await settlesWithin(running, options.drainTimeoutMs ?? 10_000))) {
        // Aborted jobs cut their work short (sends under way are cancelled), record what they know
        // and hand themselves back; the leases of any that do not are released for them.
        logger.warn({ jobs: running.size }, 'jobs still running at the drain timeout; aborting them');
        shutdown.abort();
        if (!(await settlesWithin(running, ABORT_GRACE_MS))) await handBack();
      }
      state = 'stopped';
      logger.info('job runner stopped');
    },

    handBack,
  };
}

async function settlesWithin(promises: Map<Promise<unknown>, unknown>, ms: number): Promise<boolean> {
  if (promises.size === 0) return true;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const settled = Promise.allSettled([...promises.keys()]).then(() => true);
  try {
    return await Promise.race([settled, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
