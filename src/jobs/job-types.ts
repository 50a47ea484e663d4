import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import type { Clock } from '../lib/clock.js';

/*
 * Terminology: a *job* is one row of the `jobs` table; its *kind* names the handler that runs it;
 * an *attempt* is one run of the handler (counted when the job is claimed); a *lease* is the time
 * until which the claiming worker owns the job (renewed while it runs, claimable again once expired).
 */

/**
 * Payload type per job kind. Features add their kinds by module augmentation:
 *
 * @example
 * declare module '../jobs/job-types.js' {
 *   interface JobPayloads { 'push.deliver-batch': { triggerId: string; cursor: string | null } }
 * }
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- empty here, filled by each feature's module augmentation
export interface JobPayloads {}

export type JobKind = keyof JobPayloads & string;

export interface JobHelpers {
  db: Kysely<Database>;
  logger: Logger;
  jobId: string;
  /** 1 on the first run. */
  attempt: number;
  maxAttempts: number;
  /** Aborted when the job's lease is lost, or when a shutdown's drain time ran out: stop now. */
  signal: AbortSignal;
  /**
   * Aborted as soon as the worker starts shutting down: start no new work, finish or record what is
   * under way, then throw (the job is handed back at once, uncounted, for another worker to resume).
   */
  stopping: AbortSignal;
}

/**
 * Throwing fails the attempt (retried with backoff until `maxAttempts`, then dead). A handler may
 * carry `finalise`: it runs once the job's attempts are spent (its last attempt threw, or its worker
 * died during it) and must bring the feature's state to an end without redoing the work (a batch
 * closes as failed, so its trigger can finish). A finaliser that throws is retried; then the job is dead.
 */
export type JobHandler<K extends JobKind> = ((payload: JobPayloads[K], helpers: JobHelpers) => Promise<void>) & {
  finalise?: (payload: JobPayloads[K], helpers: JobHelpers) => Promise<void>;
};

export type JobHandlers = { [K in JobKind]?: JobHandler<K> };

export interface EnqueueOptions {
  /** Epoch ms; default now. */
  runAt?: number;
  /** Default 25. */
  maxAttempts?: number;
  /**
   * De-duplication: while a job with this key is unfinished (pending or running), enqueueing the
   * key again inserts nothing and returns the existing job's id.
   */
  jobKey?: string;
  /** Time source for the default `runAt` and the timestamps; default the system clock. */
  clock?: Clock;
}

export type JobState = 'pending' | 'running' | 'succeeded' | 'dead';

/** A job as `getJob` returns it. Timestamps are epoch ms. */
export interface Job {
  id: string;
  kind: string;
  payload: unknown;
  state: JobState;
  runAt: number;
  attempts: number;
  maxAttempts: number;
  lockedBy: string | null;
  lockedUntil: number | null;
  lastError: string | null;
  jobKey: string | null;
  createdAt: number;
  updatedAt: number;
}
