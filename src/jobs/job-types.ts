import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';

/**
 * Payload type per job kind. Features add their kinds by module augmentation:
 *
 * @example
 * declare module '../jobs/job-types.js' {
 *   interface JobPayloads { 'push.deliver-batch': { triggerId: string; cursor: string | null } }
 * }
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface JobPayloads {}

export type JobKind = keyof JobPayloads & string;

export interface JobHelpers {
  db: Kysely<Database>;
  logger: Logger;
  jobId: string;
  /** 1 on the first run. */
  attempt: number;
  maxAttempts: number;
  /** Aborted when the worker shuts down or the job's lease is lost. */
  signal: AbortSignal;
}

/** Throwing fails the attempt (retried with backoff until `maxAttempts`, then dead). */
export type JobHandler<K extends JobKind> = (payload: JobPayloads[K], helpers: JobHelpers) => Promise<void>;

export type JobHandlers = { [K in JobKind]?: JobHandler<K> };

export interface EnqueueOptions {
  /** Epoch ms; default now. */
  runAt?: number;
  /** Default 25. */
  maxAttempts?: number;
  /** De-duplication: while a job with this key is pending, enqueueing the key again does nothing. */
  jobKey?: string;
}
