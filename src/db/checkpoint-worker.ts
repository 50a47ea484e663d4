// The embedded database's checkpointer thread (src/db/checkpointer.ts starts it): its own
// connection copies committed WAL frames into the database file, off the event loop. Self-contained
// (no Herald imports), so the thread loads nothing but better-sqlite3.
import { parentPort, workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';

export interface CheckpointWorkerData {
  file: string;
  intervalMs: number;
  /** Past this many WAL frames the log is forced back to its start (module doc of checkpointer.ts). */
  restartAbovePages: number;
  /** The server connection's write gate (sqlite-writer.ts): element 0 is 1 while a RESTART wants the write lock. */
  holdWrites: Int32Array;
  /** Element 0 is 1 while the reader thread runs a statement (sqlite-reader-thread.ts). */
  readerBusy: Int32Array;
}

interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

const { file, intervalMs, restartAbovePages, holdWrites, readerBusy } = workerData as CheckpointWorkerData;
const db = new SQLite(file);
// RESTART waits this long for the writer's transaction to end; a PASSIVE checkpoint never waits.
db.pragma('busy_timeout = 1000');
db.pragma('wal_autocheckpoint = 0');
// A checkpoint copies frames from the WAL to the file through a one-page buffer, never through the
// page cache: the 16 MB better-sqlite3 gives a connection would only hold what the thread once read.
db.pragma('cache_size = -256');
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const restart = db.prepare('PRAGMA wal_checkpoint(RESTART)');

function tick(): void {
  const result = passive.get() as CheckpointResult;
  if (result.log <= restartAbovePages) return;
  // Under steady load the writer appends during every passive checkpoint, so the log never ends up
  // wholly copied at the moment a commit begins, and only then does SQLite start it over. RESTART
  // holds new commits back while it copies what the passive pass left (a few milliseconds). Commits
  // that follow each other closely would starve its wait for the write lock, so the server's
  // statements wait at the write gate meanwhile.
  Atomics.store(holdWrites, 0, 1);
  // A read on the reader thread keeps its snapshot of the WAL until it ends, and RESTART would hold
  // writes back all that time: a later tick restarts the log (sqlite-reader-thread.ts, `run`).
  if (Atomics.load(readerBusy, 0) === 1) {
    Atomics.store(holdWrites, 0, 0);
    return;
  }
  try {
    restart.get();
  } finally {
    Atomics.store(holdWrites, 0, 0);
  }
}

const timer = setInterval(() => {
  try {
    tick();
  } catch (error) {
    // A failed checkpoint (disk full, I/O error) is retried at the next tick; the WAL keeps every commit meanwhile.
    parentPort?.postMessage({ error: error instanceof Error ? error.message : String(error) });
  }
}, intervalMs);

parentPort?.postMessage({ ready: true });

parentPort?.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  try {
    passive.get();
  } finally {
    db.close();
    parentPort?.close();
  }
});
