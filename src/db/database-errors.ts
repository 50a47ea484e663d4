import { setTimeout as sleep } from 'node:timers/promises';
import { backoffMs } from '../lib/retry-delay.js';
import { isStalePlan } from './named-statements.js';
/**
 * What a database error means for the code that met it. The one classifier: the HTTP and A2A error
 * mappings, the job queue and the campaign outcome writes all ask here.
 *
 * - `unavailable`: the database cannot serve now but will again (it is down, refusing connections,
 *   restarting, out of resources, or a demoted primary answering read-only after a failover). Wait
 *   and retry; a request answers 503 with Retry-After.
 * - `conflict`: the transaction lost a serialization check, was chosen as a deadlock victim, or met
 *   a named statement whose tables a migration changed (src/db/named-statements.ts; its connection
 *   is replaced). Nothing was written; run the transaction again at once.
 * - `undefined`: a real error (a constraint, a bug, a database that no longer exists). Retrying does
 *   not help.
 */
export type DatabaseErrorKind = 'unavailable' | 'conflict';

/** Node's socket errors on the way to the database (ENOTFOUND/EAI_AGAIN: its name is moving, as in a failover). */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/**
 * PostgreSQL SQLSTATEs (postgresql.org/docs/current/errcodes-appendix.html), by class: 08
 * connection exception; 53 insufficient resources (disk full, out of memory, too many connections);
 * and these codes of other classes. 57P04 (the database was dropped) is left out: it does not come back.
 */
const UNAVAILABLE_STATES = new Set([
  '57P01', // admin_shutdown: "terminating connection due to administrator command"
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up, shutting down, in recovery
  '57P05', // idle_session_timeout: the server closed an idle session
  '25006', // read_only_sql_transaction: a write reached a read-only node (a demoted primary after a failover)
]);
const CONFLICT_STATES = new Set(['40001', '40P01']); // serialization_failure, deadlock_detected

/** 55000 (object_not_in_prerequisite_state) is an outage only in this form: `ALLOW_CONNECTIONS false`, a maintenance window. */
const NOT_ACCEPTING_CONNECTIONS = /is not currently accepting connections/i;

/**
 * SQLite: the file is locked by another process past the busy timeout, unreadable, or the disk is
 * full. Within one process `SQLITE_BUSY` does not arise: every transaction begins IMMEDIATE and the
 * checkpointer lets statements by at the write gate (sqlite-writer.ts); so one that does is another
 * process holding the lock (answered 503 and logged at error level like every 5xx).
 */
const SQLITE_UNAVAILABLE = ['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_CANTOPEN', 'SQLITE_IOERR', 'SQLITE_FULL'];

/**
 * The driver's words for a connection that went away or never came: pg's pool timeout, a client
 * whose socket ended (also when that surfaces as the failed rollback on the dead client, "not
 * queryable"), a read timeout.
 */
const CONNECTION_LOST =
  /timeout exceeded when trying to connect|Connection terminated|connection is closed|database connection is not open|is not queryable|terminating connection|Query read timeout/i;

const MAX_DEPTH = 5;

export function classifyDatabaseError(error: unknown, depth = 0): DatabaseErrorKind | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (CONFLICT_STATES.has(code) || isStalePlan(error)) return 'conflict';
    if (SOCKET_CODES.has(code) || UNAVAILABLE_STATES.has(code) || code.startsWith('08') || code.startsWith('53'))
      return 'unavailable';
    if (code === '55000' && NOT_ACCEPTING_CONNECTIONS.test(error.message)) return 'unavailable';
    if (SQLITE_UNAVAILABLE.some((c) => code.startsWith(c))) return 'unavailable';
  }
  if (CONNECTION_LOST.test(error.message)) return 'unavailable';
  if (depth >= MAX_DEPTH) return undefined;
  // Wrapped errors (a `cause`, or several at once) are what they wrap.
  const cause = error.cause === undefined ? undefined : classifyDatabaseError(error.cause, depth + 1);
  if (cause) return cause;
  if (error instanceof AggregateError)
    for (const inner of error.errors as unknown[]) {
      const kind = classifyDatabaseError(inner, depth + 1);
      if (kind) return kind;
    }
  return undefined;
}

/**
 * Whether an error means the database could not do the work now, and may later: an outage, or a
 * conflict that a retry resolves. A request answers 503 with Retry-After, not 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  return classifyDatabaseError(error) !== undefined;
}

/** Waits between tries while the database is out: 100 ms, doubling to 2 s. */
const OUTAGE_BACKOFF = { baseMs: 100, capMs: 2000 };

/**
 * Runs `work` until it succeeds or fails with a real error: a conflict is retried at once (a few
 * milliseconds of jitter), an outage with backoff from 100 ms doubling to 2 s, for as long as
 * `keepTrying()` allows (default: forever). `onRetry` hears each retried failure (for a log line).
 * The work must be safe to run again: a whole transaction, or a write that tolerates an unseen commit.
 */
export async function retryWhileDatabaseUnavailable<T>(
  work: () => Promise<T>,
  options: {
    keepTrying?: () => boolean;
    onRetry?: (error: unknown, delayMs: number) => void;
  } = {},
): Promise<T> {
  for (let outages = 0; ;) {
    try {
      return await work();
    } catch (error) {
      const kind = classifyDatabaseError(error);
      if (kind === undefined || !(options.keepTrying?.() ?? true)) throw error;
      const delayMs = kind === 'conflict' ? Math.floor(Math.random() * 20) : backoffMs(++outages, OUTAGE_BACKOFF);
      options.onRetry?.(error, delayMs);
      await sleep(delayMs);
    }
  }
}
