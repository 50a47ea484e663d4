import { Worker } from 'node:worker_threads';
import type { DatabaseHandle } from './connect.js';
import type { CheckpointWorkerData } from './checkpoint-worker.js';

/**
 * Checkpoints of the embedded database, in a worker thread. SQLite's automatic checkpoint runs
 * inside the COMMIT that crosses 1,000 WAL pages, on the event loop: it copies those pages into
 * the database file and syncs both files, stalling every request meanwhile. Here the server's
 * connection never checkpoints (`wal_autocheckpoint = 0`); a thread with its own connection runs
 * `PRAGMA wal_checkpoint(PASSIVE)` every `intervalMs`, which never blocks the writer. SQLite starts
 * the log over only when a commit begins with every frame copied, which a steady stream of commits
 * rarely allows; so once the log holds more than `restartAbovePages` frames the thread runs a RESTART
 * checkpoint (new commits wait the few milliseconds it takes to copy the rest), and the WAL stays bounded;
 * `journal_size_limit` truncates the file back to that bound after a restart.
 *
 * Durability is unchanged: a commit is in the WAL file (written, `synchronous = NORMAL`) before
 * the request is answered, whichever connection later checkpoints it; each checkpoint also syncs
 * the WAL, so an OS crash can lose at most the last `intervalMs` of commits.
 */
export interface CheckpointerOptions {
  intervalMs?: number;
  restartAbovePages?: number;
  /** A checkpoint failed (retried at the next tick) or the thread died (automatic checkpoints resume). */
  onError?: (error: Error) => void;
}

export interface Checkpointer {
  /** Settles once the thread has its connection and checkpoints (tests wait for it). */
  ready: Promise<void>;
  /** True while a RESTART checkpoint waits for the write lock: new statements wait at the write gate (sqlite-writer.ts). */
  holdsWrites(): boolean;
  /** Stops the thread after a last checkpoint; automatic checkpoints resume on the connection. */
  stop(): Promise<void>;
}

export const CHECKPOINT_INTERVAL_MS = 100;
/** 16 MiB of 4 KiB pages. */
export const RESTART_ABOVE_PAGES = 4096;
const SQLITE_DEFAULT_AUTOCHECKPOINT = 1000;

/** The worker is TypeScript that Node strips itself when Herald runs from its sources. */
const workerFile = new URL(`./checkpoint-worker.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url);

/** Starts the checkpointer of an embedded database file; `undefined` for PostgreSQL and `:memory:`. */
export function startCheckpointer(
  database: DatabaseHandle,
  options: CheckpointerOptions = {},
): Checkpointer | undefined {
  const sqlite = database.sqlite;
  if (!sqlite) return undefined;
  const restartAbovePages = options.restartAbovePages ?? RESTART_ABOVE_PAGES;
  const holdWrites = sqlite.writeGate;
  const workerData: CheckpointWorkerData = {
    holdWrites,
    readerBusy: sqlite.readerBusy,
    file: sqlite.file,
    intervalMs: options.intervalMs ?? CHECKPOINT_INTERVAL_MS,
    restartAbovePages,
  };
  const pageSize = sqlite.connection.pragma('page_size', { simple: true }) as number;
  sqlite.connection.pragma(`journal_size_limit = ${restartAbovePages * pageSize}`);
  sqlite.connection.pragma('wal_autocheckpoint = 0');
  const resumeAutomatic = () => {
    if (sqlite.connection.open) sqlite.connection.pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_AUTOCHECKPOINT}`);
  };
  const worker = new Worker(workerFile, { workerData });
  worker.unref();
  let started = (): void => {};
  const ready = new Promise<void>((resolve) => {
    started = resolve;
  });
  worker.on('message', (message: { error?: string; ready?: true }) => {
    if (message.ready) started();
    if (message.error !== undefined) options.onError?.(new Error(`WAL checkpoint failed: ${message.error}`));
  });
  let stopping = false;
  worker.on('error', (error) => {
    Atomics.store(holdWrites, 0, 0);
    started();
    resumeAutomatic();
    if (!stopping) options.onError?.(error);
  });
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return {
    ready,
    holdsWrites: () => Atomics.load(holdWrites, 0) === 1,
    async stop() {
      stopping = true;
      // Unreferenced, the thread would not keep the process alive until its last checkpoint ends:
      // with nothing else pending, Node would exit mid-await (code 13, an unsettled top-level await).
      worker.ref();
      worker.postMessage('stop');
      await exited;
      resumeAutomatic();
    },
  };
}
