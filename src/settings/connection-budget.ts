/** The roles of src/config.ts (`HeraldRole`), spelled here so the config can import this file. */
type HeraldRole = 'api' | 'worker' | 'all';

/**
 * PostgreSQL connections per process, by role (docs/operations.md, "Connections"). Every pool
 * opens connections only as it needs them; these are the most each may hold.
 *
 * - the query pool on DATABASE_URL: an API instance serves up to 10 statements at once; a worker
 *   runs JOB_CONCURRENCY jobs, each one statement or transaction at a time, plus 2 for the runner's
 *   own claims and lease renewals; `all` shares one pool between both.
 * - LISTEN: one held connection per listener the role runs (the API's A2A event listener, the
 *   worker's job wake-up listener), on DATABASE_LISTEN_URL or DATABASE_URL, none behind a pooler
 *   without a listen URL (then both poll).
 * - the replica pool (DATABASE_READ_URL): the API's lists, analytics and dry runs; a worker reads
 *   no replica.
 */
export function defaultPoolSizes(role: HeraldRole, jobConcurrency: number): { pool: number; readPool: number } {
  if (role === 'worker') return { pool: jobConcurrency + 2, readPool: 0 };
  return { pool: 10, readPool: 5 };
}

/** LISTEN connections the role holds when LISTEN is possible. */
export const listenersOf = (role: HeraldRole): number => (role === 'all' ? 2 : 1);

export interface ConnectionBudget {
  role: HeraldRole;
  /** The query pool on DATABASE_URL (through the pooler when there is one). */
  pool: number;
  /** Held LISTEN connections to the primary (direct, never through a pooler). */
  listen: number;
  /** The pool on DATABASE_READ_URL (0 without one). */
  readPool: number;
  /** What this process may open to DATABASE_URL's server (or pooler) and directly to the primary for LISTEN. */
  primary: number;
  /** pool + listen + readPool. */
  total: number;
}

export function connectionBudget(config: {
  role: HeraldRole;
  databasePoolSize: number;
  databaseReadPoolSize: number;
  databasePooler: 'none' | 'transaction';
  databaseListenUrl: string | undefined;
  databaseReadUrl: string | undefined;
}): ConnectionBudget {
  const canListen = config.databasePooler !== 'transaction' || config.databaseListenUrl !== undefined;
  const listen = canListen ? listenersOf(config.role) : 0;
  const readPool = config.databaseReadUrl === undefined ? 0 : config.databaseReadPoolSize;
  const pool = config.databasePoolSize;
  return { role: config.role, pool, listen, readPool, primary: pool + listen, total: pool + listen + readPool };
}
