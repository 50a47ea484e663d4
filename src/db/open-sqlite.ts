import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, type SqliteDatabase } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { Database } from './database.js';
import type { DatabaseHandle } from './database-handle.js';
import { registerDataVersion } from './data-version.js';
import { sqliteDialect } from './dialect.js';
import { openSqliteReader } from './sqlite-reader.js';
import { createWriteGate, ImmediateSqliteDialect } from './sqlite-writer.js';

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

/**
 * `dryRunTimeoutMs` (0: none) bounds a dry run's statements, which run on the reader thread
 * (sqlite-reader.ts) for a file; `:memory:` has no other connection to read it, so there they run
 * on the server's connection, unbounded.
 */
export function openSqlite(file: string, options: { dryRunTimeoutMs?: number } = {}): DatabaseHandle {
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
  const readerBusy = new Int32Array(new SharedArrayBuffer(4));
  const db = new Kysely<Database>({
    dialect: new ImmediateSqliteDialect({ database: withStatementCache(sqlite) }, writeGate),
  });
  registerDataVersion(db, dataVersionPerTurn(sqlite));
  const dryRunDb =
    file === ':memory:'
      ? db
      : openSqliteReader({
          file,
          writeGate,
          readerBusy,
          timeoutMs: options.dryRunTimeoutMs ?? 0,
          setting: 'DATABASE_DRY_RUN_TIMEOUT_MS',
        });
  return {
    db,
    dialect: sqliteDialect,
    readDb: db,
    dryRunDb,
    ...(file === ':memory:' ? {} : { sqlite: { file, connection: sqlite, writeGate, readerBusy } }),
    async close() {
      if (dryRunDb !== db) await dryRunDb.destroy();
      await db.destroy();
    },
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
