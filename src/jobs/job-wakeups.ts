import type pg from 'pg';
import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import { sqlDialect } from '../db/dialect.js';
import { backoffMs } from '../lib/retry-delay.js';

/*
 * How runners learn that jobs were enqueued, so they claim at once instead of at their next poll.
 * PostgreSQL: NOTIFY on commit, one LISTENing connection per runner, across processes. SQLite: no
 * such channel, so a runner in the enqueuing process is called directly; other processes poll.
 */

/** The channel `pg_notify` wakes workers on (rule `instances`). Database-wide, so deployments sharing a database share wake-ups (harmless: a wake-up only triggers a claim). */
export const JOBS_CHANNEL = 'herald_jobs';

export interface JobWakeups {
  close(): void;
}

const MAX_RECONNECT_DELAY_MS = 30_000;

/**
 * Keeps one pooled client LISTENing on the jobs channel and calls `onWake` for every notice. When
 * the connection drops it reconnects with backoff (1 s doubling to 30 s) and wakes once on
 * reconnecting, since notices sent while disconnected are lost. Polling still covers any gap.
 * Resolves after the first connection attempt, whether or not it succeeded.
 */
export async function listenForJobWakeups(pool: pg.Pool, logger: Logger, onWake: () => void): Promise<JobWakeups> {
  let client: pg.PoolClient | undefined;
  let closed = false;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;

  const onNotification = (message: pg.Notification) => {
    if (message.channel === JOBS_CHANNEL) onWake();
  };

  const scheduleReconnect = () => {
    if (closed) return;
    const delay = backoffMs(failures + 1, { baseMs: 1000, capMs: MAX_RECONNECT_DELAY_MS });
    failures += 1;
    retryTimer = setTimeout(() => void connect(), delay);
  };

  const drop = (dropped: pg.PoolClient, error?: Error) => {
    if (client !== dropped) return;
    client = undefined;
    dropped.off('notification', onNotification);
    // Passing an error destroys the connection instead of returning it to the pool.
    dropped.release(error ?? new Error('job wake-up connection dropped'));
    if (closed) return;
    logger.warn({ err: error }, 'job wake-up connection dropped; reconnecting');
    scheduleReconnect();
  };

  const connect = async (): Promise<void> => {
    let candidate: pg.PoolClient | undefined;
    try {
      candidate = await pool.connect();
      const current = candidate;
      current.on('error', (error) => drop(current, error));
      current.on('end', () => drop(current));
      current.on('notification', onNotification);
      await current.query(`LISTEN ${JOBS_CHANNEL}`);
      const { rows } = await current.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      if (closed) {
        // Destroyed rather than returned: a pooled connection must not stay subscribed.
        current.release(true);
        return;
      }
      client = current;
      failures = 0;
      logger.debug({ backend_pid: rows[0]?.pid }, 'listening for job wake-ups');
      onWake();
    } catch (error) {
      candidate?.off('notification', onNotification);
      candidate?.release(error instanceof Error ? error : true);
      if (closed) return;
      logger.warn({ err: error }, 'could not listen for job wake-ups; retrying (polling continues meanwhile)');
      scheduleReconnect();
    }
  };

  await connect();
  return {
    close() {
      closed = true;
      clearTimeout(retryTimer);
      const current = client;
      client = undefined;
      if (!current) return;
      current.off('notification', onNotification);
      // Closing the connection ends the subscription; it is not returned to the pool subscribed.
      current.release(true);
    },
  };
}

/**
 * In-process wake-ups, for SQLite where there is no LISTEN/NOTIFY: a runner in the same process as
 * the enqueuer starts a job at once instead of at its next poll. Keyed by the database's adapter,
 * which a Kysely instance shares with its transactions. Other processes still poll.
 */
const localWakeups = new WeakMap<object, Set<() => void>>();

const wakeupKey = (db: Db): object => db.getExecutor().adapter;

export function listenForLocalJobWakeups(db: Db, onWake: () => void): JobWakeups {
  const key = wakeupKey(db);
  let listeners = localWakeups.get(key);
  if (!listeners) localWakeups.set(key, (listeners = new Set()));
  listeners.add(onWake);
  return { close: () => listeners.delete(onWake) };
}

/**
 * Tells runners that jobs were enqueued through `db`. PostgreSQL: a notice delivered on commit and
 * dropped on rollback (identical notices in one transaction fold into one). SQLite: runners in this
 * process are woken after the current turn, since inside a transaction the job is not visible until
 * it commits (and a claim waits for that).
 */
export async function notifyJobsEnqueued(db: Db): Promise<void> {
  if (await sqlDialect(db).notifyOnCommit(db, JOBS_CHANNEL)) return;
  for (const onWake of localWakeups.get(wakeupKey(db)) ?? []) setImmediate(onWake);
}
