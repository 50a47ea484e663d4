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
}

interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

const { file, intervalMs, restartAbovePages } = workerData as CheckpointWorkerData;
const db = new SQLite(file);
// RESTART waits this long for the writer's transaction to end; a PASSIVE checkpoint never waits.
db.pragma('busy_timeout = 1000');
db.pragma('wal_autocheckpoint = 0');
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const restart = db.prepare('PRAGMA wal_checkpoint(RESTART)');

/** Passive checkpoints until every frame is copied (the writer then starts the log over) or `tries` run out. */
function catchUp(tries: number): CheckpointResult {
  let result = passive.get() as CheckpointResult;
  for (let i = 1; i < tries && result.checkpointed < result.log; i++) result = passive.get() as CheckpointResult;
  return result;
}

function tick(): void {
  const result = catchUp(3);
  if (result.log <= restartAbovePages || catchUp(50).checkpointed >= result.log) return;
  // The writer commits faster than passive checkpoints catch up: stop new commits for as long as the
  // last frames take to copy, so the log starts over and cannot grow without bound.
  restart.get();
}

const timer = setInterval(() => {
  try {
    tick();
  } catch (error) {
    // A failed checkpoint (disk full, I/O error) is retried at the next tick; the WAL keeps every commit meanwhile.
    parentPort?.postMessage({ error: error instanceof Error ? error.message : String(error) });
  }
}, intervalMs);

parentPort?.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  try {
    catchUp(3);
  } finally {
    db.close();
    parentPort?.close();
  }
});
