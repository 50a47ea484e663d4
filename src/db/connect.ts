import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type SqliteDatabase } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from './database.js';
import type { Dialect } from './dialect.js';
import { ensureDataDir } from '../lib/data-dir.js';
import { registerDataVersion } from './data-version.js';

export interface DatabaseTarget {
  /** PostgreSQL connection string; absent selects SQLite. */
  url?: string | undefined;
  /** SQLite file path, or `:memory:`. */
  sqliteFile?: string;
  poolSize?: number;
  /** PostgreSQL schema to use as `search_path` (tests isolate files this way). */
  schema?: string;
  onPoolError?: (error: Error) => void;
}

export interface DatabaseHandle {
  db: Kysely<Database>;
  dialect: Dialect;
  /** The raw pg pool (PostgreSQL only), for LISTEN/NOTIFY and other connection-level needs. */
  pgPool?: pg.Pool;
  close(): Promise<void>;
}

const INT8_OID = 20;

export function openDatabase(target: DatabaseTarget): DatabaseHandle {
  if (target.url) return openPostgres(target.url, target);
  return openSqlite(target.sqliteFile ?? ':memory:');
}

function openPostgres(url: string, target: DatabaseTarget): DatabaseHandle {
  const pool = new pg.Pool({
    connectionString: url,
    max: target.poolSize ?? 10,
    connectionTimeoutMillis: 5000,
    ...(target.schema ? { options: `-c search_path=${target.schema}` } : {}),
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
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return { db, dialect: 'postgres', pgPool: pool, close: () => db.destroy() };
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

function openSqlite(file: string): DatabaseHandle {
  if (file !== ':memory:') prepareSqliteFiles(file);
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('synchronous = NORMAL');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  const dataVersion = sqlite.prepare('PRAGMA data_version').pluck();
  registerDataVersion(db, () => dataVersion.get() as number);
  return { db, dialect: 'sqlite', close: () => db.destroy() };
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely prepares every query anew, and for small statements preparing costs more than running.
 * Statements are cached by SQL text (bounded, least recently used out). Safe because Kysely runs
 * each statement to completion synchronously on SQLite's single connection.
 */
function withStatementCache(sqlite: SQLite.Database): SqliteDatabase {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(sql: string) {
      let statement = cache.get(sql);
      if (statement) {
        cache.delete(sql);
      } else {
        statement = sqlite.prepare(sql);
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
      }
      cache.set(sql, statement);
      return statement;
    },
  };
}

/** The configured database: `DATABASE_URL` (PostgreSQL), else the embedded file `DATA_DIR/herald.sqlite`. */
export function openConfiguredDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'databasePoolSize'>,
  logger?: Pick<Logger, 'warn' | 'info'>,
): DatabaseHandle {
  if (config.databaseUrl === undefined && ensureDataDir(config.dataDir))
    logger?.info({ data_dir: config.dataDir }, 'created data directory');
  return openDatabase({
    url: config.databaseUrl,
    sqliteFile: path.join(config.dataDir, 'herald.sqlite'),
    poolSize: config.databasePoolSize,
    onPoolError: (error) => logger?.warn({ err: error }, 'database connection lost'),
  });
}
