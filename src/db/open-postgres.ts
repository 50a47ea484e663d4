import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient } from 'kysely';
import pg from 'pg';
import type { Database } from './database.js';
import type { DatabaseHandle, DatabaseTarget } from './database-handle.js';
import { postgresDialect } from './dialect.js';
import { inTransactionAfter, isStalePlan, statementNames, type StatementNames } from './named-statements.js';
import { withStatementTimeout } from './statement-timeout.js';

const INT8_OID = 20;

export function openPostgres(url: string, target: DatabaseTarget): DatabaseHandle {
  const pool = openPool(url, target.poolSize ?? 10, target);
  const names = target.pooler === 'transaction' ? undefined : statementNames();
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: poolForKysely(pool, names) }) });
  // LISTEN holds one connection for as long as it listens: through a transaction-mode pooler the
  // NOTIFYs would go to whichever client borrowed the server connection, so only a direct one will do.
  // A pool of its own, so a listener never takes a connection the queries count on.
  const listenTo = target.listenUrl ?? (target.pooler === 'transaction' ? undefined : url);
  const listenPool = listenTo ? openPool(listenTo, target.listenPoolSize ?? LISTEN_POOL_SIZE, target) : undefined;
  const readPoolSize = target.readPoolSize ?? target.poolSize ?? 10;
  const replicaPool = target.readUrl && readPoolSize > 0 ? openPool(target.readUrl, readPoolSize, target) : undefined;
  const readPool = replicaPool ?? pool;
  /** `db` itself when reads share it without a timeout, else a handle on the read pool. */
  const reader = (timeoutMs: number | undefined, setting: string): Kysely<Database> => {
    if (!timeoutMs && !replicaPool) return db;
    const handlePool = timeoutMs ? withStatementTimeout(readPool, timeoutMs, setting) : sharedPool(readPool);
    return new Kysely<Database>({ dialect: new PostgresDialect({ pool: handlePool }) });
  };
  const readDb = reader(target.readTimeoutMs, 'DATABASE_READ_TIMEOUT_MS');
  const dryRunDb = reader(target.dryRunTimeoutMs, 'DATABASE_DRY_RUN_TIMEOUT_MS');
  return {
    db,
    dialect: postgresDialect,
    pgPool: pool,
    ...(listenPool ? { listenPool } : {}),
    readDb,
    dryRunDb,
    async close() {
      for (const handle of new Set([readDb, dryRunDb])) if (handle !== db) await handle.destroy();
      await replicaPool?.end();
      await listenPool?.end();
      await db.destroy();
    },
  };
}

/** A pool shared by several handles: only the handle that owns it ends it. */
function sharedPool(pool: pg.Pool): PostgresPool {
  return { connect: () => pool.connect(), end: async () => undefined };
}

/** SQLSTATE read_only_sql_transaction. */
const READ_ONLY_TRANSACTION = '25006';

/**
 * The pool as Kysely sees it, with two differences. Statements sent again and again go as named
 * prepared statements when `names` is given (src/db/named-statements.ts). And a connection is closed
 * when released instead of pooled again once a statement on it failed with "read-only transaction"
 * or a stale named plan. After a failover an address may still reach the demoted node for a while,
 * and its sessions stay read-only for life: only a new connection reaches the new primary. (Reads on
 * such a session still work, so nothing else would ever drop it.)
 *
 * A stale named plan on one connection means its tables changed under every connection's named
 * statements, so each connection opened before it is replaced when next released or taken from the
 * pool: a change of schema fails the statements under way then, not one per connection and text.
 */
function poolForKysely(pool: pg.Pool, names: StatementNames | undefined): PostgresPool {
  /** Raised at each stale plan; a connection opened at an older one may hold stale names. */
  let schemaGeneration = 0;
  const wrapped = new WeakMap<pg.PoolClient, { kysely: PostgresPoolClient; born: number }>();
  const STALE = 'a named statement outlived a change of its tables';
  const wrap = (client: pg.PoolClient) => {
    const born = schemaGeneration;
    let dropReason: string | undefined;
    let inTransaction = false;
    const query = async (text: string, parameters: ReadonlyArray<unknown>) => {
      const values = parameters as unknown[];
      const name = names?.nameOf(text);
      inTransaction = inTransactionAfter(text, inTransaction);
      try {
        return await (name === undefined ? client.query(text, values) : client.query({ name, text, values }));
      } catch (error) {
        if ((error as { code?: unknown }).code === READ_ONLY_TRANSACTION)
          dropReason = 'the session is read-only (a demoted primary?)';
        if (name === undefined || !isStalePlan(error)) throw error;
        dropReason = STALE;
        schemaGeneration++;
        // Alone, the statement can run again unnamed; inside a transaction the failure has aborted it.
        if (inTransaction) throw error;
        return client.query(text, values);
      }
    };
    const kysely: PostgresPoolClient = {
      // Only the (sql, parameters) form: Kysely passes a cursor only to a dialect given `cursor`, which Herald's is not.
      query: query as unknown as PostgresPoolClient['query'],
      release() {
        const reason = dropReason ?? (born < schemaGeneration ? STALE : undefined);
        dropReason = undefined;
        inTransaction = false;
        client.release(reason === undefined ? undefined : new Error(reason));
      },
    };
    return { kysely, born };
  };
  return {
    async connect() {
      for (;;) {
        const client = await pool.connect();
        let entry = wrapped.get(client);
        if (entry && entry.born < schemaGeneration) {
          client.release(new Error(STALE));
          continue;
        }
        if (!entry) wrapped.set(client, (entry = wrap(client)));
        return entry.kysely;
      }
    },
    end: () => pool.end(),
  };
}

/** The job runner's wake-up listener and the A2A event listener: one connection each per process. */
const LISTEN_POOL_SIZE = 2;

function openPool(url: string, max: number, target: DatabaseTarget): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: 5000,
    // A URL's own `options` (e.g. a replica's search_path) wins over the test schema.
    ...(target.schema && !new URL(url).searchParams.has('options')
      ? { options: `-c search_path=${target.schema}` }
      : {}),
    // Epoch-millisecond columns are bigint; they fit a double exactly, so read them as numbers.
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID
          ? (value: string) => Number(value)
          : (pg.types.getTypeParser(oid, format) as (value: string) => unknown)) as typeof pg.types.getTypeParser,
    },
  });
  // A connection lost while idle, or while checked out, emits 'error'; without a listener that
  // would crash the process. The query using it fails on its own (answered 503), so reporting is enough.
  pool.on('error', (error) => target.onPoolError?.(error));
  pool.on('connect', (client) => client.on('error', (error) => target.onPoolError?.(error)));
  return pool;
}
