import { setTimeout as sleep } from 'node:timers/promises';
import {
  CompiledQuery,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type Driver,
  type SqliteDialectConfig,
} from 'kysely';

/**
 * The embedded database's one writer. Herald has one SQLite connection per process, and every write
 * goes through it in turn; what it must not meet is a lock it cannot wait for.
 *
 * Kysely opens a transaction with a plain `BEGIN`, which is deferred: it takes a read snapshot at
 * its first statement and asks for the write lock only at its first write. If another connection
 * (the checkpointer thread's RESTART, which takes the write lock; another process) holds it then,
 * SQLite answers `SQLITE_BUSY` at once without calling the busy handler, because waiting while
 * holding a snapshot could deadlock. That is how a device registration (a read, then writes)
 * failed under load. `BEGIN IMMEDIATE` takes the write lock before anything else, when SQLite can
 * wait for it (`busy_timeout`); so every transaction here begins that way.
 *
 * The write gate lets the checkpointer have the lock without anyone sleeping on the event loop: while
 * its RESTART waits for the lock (element 0 is 1, set by checkpoint-worker.ts), a statement that
 * needs the connection waits a turn at a time, at most `MAX_GATE_WAIT_MS`, before it runs; one
 * that then still meets the lock waits in the busy handler (a few milliseconds of copying).
 */
export type WriteGate = Int32Array;

export function createWriteGate(): WriteGate {
  return new Int32Array(new SharedArrayBuffer(4));
}

/** Longest a statement waits at the gate (a RESTART that needs longer is let wait instead). */
const MAX_GATE_WAIT_MS = 50;

async function passGate(gate: WriteGate): Promise<void> {
  for (let waited = 0; Atomics.load(gate, 0) === 1 && waited < MAX_GATE_WAIT_MS; waited++)
    await sleep(1);
}

class ImmediateSqliteDriver extends SqliteDriver {
  readonly #gate: WriteGate;

  constructor(config: SqliteDialectConfig, gate: WriteGate) {
    super(config);
    this.#gate = gate;
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await super.acquireConnection();
    if (Atomics.load(this.#gate, 0) === 1) await passGate(this.#gate);
    return connection;
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/** Kysely's SQLite dialect, except that transactions begin `IMMEDIATE` and statements pass the write gate. */
export class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;
  readonly #gate: WriteGate;

  constructor(config: SqliteDialectConfig, gate: WriteGate) {
    super(config);
    this.#config = config;
    this.#gate = gate;
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config, this.#gate);
  }
}
