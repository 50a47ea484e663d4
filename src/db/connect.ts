import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient, type SqliteDatabase } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { LRUCache } from 'lru-cache';
import type { Config, DatabasePooler } from '../config.js';
import type { Database } from './database.js';
import { postgresDialect, sqliteDialect, type SqlDialect } from './dialect.js';
import { ensureDataDir } from '../lib/data-dir.js';
import { registerDataVersion } from './data-version.js';
import { listenersOf } from '../settings/connection-budget.js';
import { withStatementTimeout } from './statement-timeout.js';
import { createWriteGate, ImmediateSqliteDialect, type WriteGate } from './sqlite-writer.js';

export interface DatabaseTarget {
  /** PostgreSQL connection string; absent selects SQLite. */
  url?: string | undefined;
  /** SQLite file path, or `:memory:`. */
  sqliteFile?: string;
  poolSize?: number;
  /** `transaction`: `url` is a pooler in transaction mode, so LISTEN goes through `listenUrl` or not at all. */
  pooler?: DatabasePooler;
  /** A direct PostgreSQL connection string for LISTEN (default: `url`, unless behind a pooler). */
  listenUrl?: string | undefined;
  /** A read-only PostgreSQL connection string (a replica) for reads that may lag the primary. */
  readUrl?: string | undefined;
  /** The replica pool's size (default `poolSize`). */
  readPoolSize?: number;
  /** LISTEN connections (default 2: the job runner's and the A2A event listener). */
  listenPoolSize?: number;
  /** `statement_timeout` of `readDb` and of `dryRunDb` (0 or absent: none). */
  readTimeoutMs?: number;
  dryRunTimeoutMs?: number;
  /** PostgreSQL schema to use as `search_path` (tests isolate files this way). */
  schema?: string;
  onPoolError?: (error: Error) => void;
}

export interface DatabaseHandle {
  db: Kysely<Database>;
  /** Every difference between the two databases, chosen here once; features get it in their deps. */
  dialect: SqlDialect;
  /** The raw pg pool of `db` (PostgreSQL only), for NOTIFY and other connection-level needs. */
  pgPool?: pg.Pool;
  /**
   * The pool whose connections may LISTEN (PostgreSQL only): a small pool of its own, on `listenUrl`
   * or else on `url` (a direct connection), absent behind a pooler without a listen URL
   * (then job wake-ups and cross-instance A2A events are polled).
   */
  listenPool?: pg.Pool;
  /**
   * Reads that may lag the primary (audience counts, lists, analytics): a replica's handle when
   * `readUrl` is set, else the primary's pool; under `readTimeoutMs` when given (else `db` itself
   * without a replica). Never for a read that must see a write just made.
   */
  readDb: Kysely<Database>;
  /** Dry runs' reads: where `readDb` reads, under their own, longer statement timeout. */
  dryRunDb: Kysely<Database>;
  /**
   * The connection of an embedded database file (not `:memory:`) and its write gate, for its
   * checkpointer (checkpointer.ts, sqlite-writer.ts).
   */
  sqlite?: { file: string; connection: SQLite.Database; writeGate: WriteGate };
  close(): Promise<void>;
}

const INT8_OID = 20;

export function openDatabase(target: DatabaseTarget): DatabaseHandle {
  if (target.url) return openPostgres(target.url, target);
  return openSqlite(target.sqliteFile ?? ':memory:');
}

function openPostgres(url: string, target: DatabaseTarget): DatabaseHandle {
  const pool = openPool(url, target.poolSize ?? 10, target);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: droppingReadOnlySessions(pool) }) });
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
 * The pool as Kysely sees it, except that a connection on which a statement failed with "read-only
 * transaction" is closed when released instead of pooled again. After a failover an address may
 * still reach the demoted node for a while, and its sessions stay read-only for life: only a new
 * connection reaches the new primary. (Reads on such a session still work, so nothing else would
 * ever drop it.)
 */
function droppingReadOnlySessions(pool: pg.Pool): PostgresPool {
  const wrapped = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    let readOnly = false;
    const query = async (text: string, parameters: ReadonlyArray<unknown>) => {
      try {
        return await client.query(text, parameters as unknown[]);
      } catch (error) {
        if ((error as { code?: unknown }).code === READ_ONLY_TRANSACTION) readOnly = true;
        throw error;
      }
    };
    return {
      // Only the (sql, parameters) form: Kysely passes a cursor only to a dialect given `cursor`, which Herald's is not.
      query: query as unknown as PostgresPoolClient['query'],
      release() {
        const drop = readOnly;
        readOnly = false;
        client.release(drop ? new Error('the session is read-only (a demoted primary?)') : undefined);
      },
    };
  };
  return {
    async connect() {
      const client = await pool.connect();
      let kysely = wrapped.get(client);
      if (!kysely) wrapped.set(client, (kysely = wrap(client)));
      return kysely;
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

/**
 * The database holds every tenant's data: its directory is made 0700 when Herald creates it, and
 * the file is created 0600 before SQLite opens it (SQLite gives `-wal` and `-shm` the main file's
 * mode). Files left by older versions are tightened to 0600 too.
 */
function prepareSqliteFiles(file: string): void {
  const dir = path.dirname(file);
  if (!fs.existsSync(dir)) fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.closeSync(fs.openSync(file, 'a', 0o600));
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      fs.chmodSync(f, 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
}

/**
 * The connection's page cache, negative for KiB: 4 MiB (1,024 pages of 4 KiB), where better-sqlite3
 * builds SQLite with 16 MB. What it keeps hot is the B-trees' inner pages and the job and trigger
 * rows, far under 4 MiB; the rest (a broadcast's scan over the users, read once) only filled it, and
 * stayed resident for the process's life (docs/decisions.md). The OS's file cache serves a miss.
 */
const SQLITE_CACHE_KIB = -4096;

function openSqlite(file: string): DatabaseHandle {
  if (file !== ':memory:') prepareSqliteFiles(file);
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  // Durable on commit (docs/decisions.md): in WAL mode a COMMIT writes its frames to the WAL file
  // before it returns, so an answered write survives a crash of Herald; NORMAL syncs the WAL at each
  // checkpoint rather than at each commit, so an OS crash or power loss may lose the latest commits.
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma(`cache_size = ${SQLITE_CACHE_KIB}`);
  const writeGate = createWriteGate();
  const db = new Kysely<Database>({
    dialect: new ImmediateSqliteDialect({ database: withStatementCache(sqlite) }, writeGate),
  });
  registerDataVersion(db, dataVersionPerTurn(sqlite));
  return {
    db,
    dialect: sqliteDialect,
    readDb: db,
    // SQLite has no statement timeout: a dry run there is bounded by the request timeout alone.
    dryRunDb: db,
    ...(file === ':memory:' ? {} : { sqlite: { file, connection: sqlite, writeGate } }),
    close: () => db.destroy(),
  };
}

/**
 * `PRAGMA data_version`, read at most once per event-loop turn: the read opens a read transaction
 * (WAL locks, a few system calls), too much to pay on every request.
 * Every request whose check shares a turn arrived before the turn's first read, so a commit by
 * another process is seen from the first request that arrives after it, as with a read per request.
 */
function dataVersionPerTurn(sqlite: SQLite.Database): () => number {
  const statement = sqlite.prepare('PRAGMA data_version').pluck();
  let value: number | undefined;
  const forget = () => {
    value = undefined;
  };
  return () => {
    if (value === undefined) {
      value = statement.get() as number;
      setImmediate(forget);
    }
    return value;
  };
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely prepares every query anew, and for small statements preparing costs more than running.
 * Statements are cached by SQL text (bounded, least recently used out). Safe because Kysely runs
 * each statement to completion synchronously on SQLite's single connection.
 */
function withStatementCache(sqlite: SQLite.Database): SqliteDatabase {
  const cache = new LRUCache<string, SQLite.Statement>({ max: STATEMENT_CACHE_SIZE });
  return {
    close: () => sqlite.close(),
    prepare(sql: string) {
      let statement = cache.get(sql);
      if (!statement) {
        statement = sqlite.prepare(sql);
        cache.set(sql, statement);
      }
      return statement;
    },
  };
}

/** The configured database: `DATABASE_URL` (PostgreSQL), else the embedded file `DATA_DIR/herald.sqlite`. */
export function openConfiguredDatabase(
  config: Pick<
    Config,
    | 'role'
    | 'databaseUrl'
    | 'dataDir'
    | 'databasePoolSize'
    | 'databaseReadPoolSize'
    | 'databasePooler'
    | 'databaseListenUrl'
    | 'databaseReadUrl'
    | 'databaseReadTimeoutMs'
    | 'databaseDryRunTimeoutMs'
  >,
  logger?: Pick<Logger, 'warn' | 'info'>,
): DatabaseHandle {
  if (config.databaseUrl === undefined && ensureDataDir(config.dataDir))
    logger?.info({ data_dir: config.dataDir }, 'created data directory');
  return openDatabase({
    url: config.databaseUrl,
    sqliteFile: path.join(config.dataDir, 'herald.sqlite'),
    poolSize: config.databasePoolSize,
    pooler: config.databasePooler,
    listenUrl: config.databaseListenUrl,
    readUrl: config.databaseReadUrl,
    readPoolSize: config.databaseReadPoolSize,
    listenPoolSize: listenersOf(config.role),
    readTimeoutMs: config.databaseReadTimeoutMs,
    dryRunTimeoutMs: config.databaseDryRunTimeoutMs,
    onPoolError: (error) => logger?.warn({ err: error }, 'database connection lost'),
  });
}
