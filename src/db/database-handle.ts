import type SQLite from 'better-sqlite3';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { DatabasePooler } from '../config.js';
import type { Database } from './database.js';
import type { SqlDialect } from './dialect.js';
import type { WriteGate } from './sqlite-writer.js';

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
  /** `statement_timeout` of `readDb` (PostgreSQL) and of `dryRunDb` (both databases), 0 or absent: none. */
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
  /**
   * Dry runs' reads, under their own, longer timeout: where `readDb` reads on PostgreSQL; on an
   * embedded file, a reader thread with its own connection (sqlite-reader.ts), single statements only.
   */
  dryRunDb: Kysely<Database>;
  /**
   * The connection of an embedded database file (not `:memory:`), its write gate and the reader
   * thread's busy flag, for its checkpointer (checkpointer.ts, sqlite-writer.ts, sqlite-reader-thread.ts).
   */
  sqlite?: { file: string; connection: SQLite.Database; writeGate: WriteGate; readerBusy: Int32Array };
  close(): Promise<void>;
}
