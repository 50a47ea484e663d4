// The embedded database's reader thread (src/db/sqlite-reader.ts starts it): long reads (a broadcast
// dry run's counts) run on its own read-only connection, off the event loop. Self-contained (no
// Herald imports), so the thread loads nothing but better-sqlite3.
import { parentPort, workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';

export interface SqliteReaderThreadData {
  file: string;
  /** The server connection's write gate: element 0 is 1 while the checkpointer's RESTART runs (sqlite-writer.ts). */
  writeGate: Int32Array;
  /** Element 0 is 1 while this thread runs a statement (checkpoint-worker.ts leaves RESTART for later then). */
  readerBusy: Int32Array;
}

export interface ReadRequest {
  id: number;
  sql: string;
  parameters: readonly unknown[];
}

export type ReadAnswer = { id: number; rows: unknown[] } | { id: number; error: { message: string; code?: string } };

const { file, writeGate, readerBusy } = workerData as SqliteReaderThreadData;
const db = new SQLite(file, { readonly: true, fileMustExist: true });
db.pragma('busy_timeout = 5000');
// As the server connection's (open-sqlite.ts): a count reads most pages once, a large cache would only keep them.
db.pragma('cache_size = -4096');

/** Statements by SQL text; a dry run's SQL varies with its segment, so the map starts over past a bound. */
const statements = new Map<string, SQLite.Statement>();
const MAX_STATEMENTS = 200;

function prepare(sql: string): SQLite.Statement {
  let statement = statements.get(sql);
  if (!statement) {
    if (statements.size >= MAX_STATEMENTS) statements.clear();
    statement = db.prepare(sql);
    statements.set(sql, statement);
  }
  return statement;
}

/**
 * A RESTART checkpoint waits for every reader to leave the WAL while it holds new writes back, so a
 * long read would stall the server's writes. Each side raises its own flag, then looks at the other's:
 * the checkpointer skips RESTART while a read runs, and a read waits for a RESTART already under way
 * (a few milliseconds of copying). Both may see each other; then the checkpointer yields.
 */
function run(request: ReadRequest): ReadAnswer {
  Atomics.store(readerBusy, 0, 1);
  try {
    while (Atomics.load(writeGate, 0) === 1) Atomics.wait(writeGate, 0, 1, 5);
    // Reads only: the connection is read-only, and the driver (sqlite-reader.ts) opens no transaction.
    return { id: request.id, rows: prepare(request.sql).all(...(request.parameters as unknown[])) };
  } catch (error) {
    const { message, code } = error as { message?: string; code?: string };
    return { id: request.id, error: { message: message ?? String(error), ...(code !== undefined && { code }) } };
  } finally {
    Atomics.store(readerBusy, 0, 0);
  }
}

parentPort?.on('message', (request: ReadRequest) => parentPort?.postMessage(run(request)));
parentPort?.postMessage('ready');
