import type { Kysely, Transaction } from 'kysely';
import type { Database, Db } from './database.js';
import type { Dialect } from './dialect.js';

/** Runs a unit of database work in a transaction, possibly shared with other units. */
export interface WriteCommitter {
  run<T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T>;
  /**
   * A unit that is one statement, atomic on its own: it shares a commit on SQLite like `run`, and runs
   * without BEGIN and COMMIT on PostgreSQL (its own implicit transaction: one round trip, not three).
   */
  runStatement<T>(work: (db: Db) => Promise<T>): Promise<T>;
}

interface Pending {
  work: (trx: Transaction<Database>) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** Each unit in its own transaction (PostgreSQL, where the server groups concurrent commits itself). */
export const separateTransactions = (db: Kysely<Database>): WriteCommitter => ({
  run: (work) => db.transaction().execute(work),
  runStatement: (work) => work(db),
});

const MAX_GROUP = 64;

/** The write committer for a dialect: group commit on SQLite, plain transactions on PostgreSQL. */
export const writeCommitterFor = (db: Kysely<Database>, dialect: Dialect): WriteCommitter =>
  dialect === 'sqlite' ? createGroupCommit(db) : separateTransactions(db);

/**
 * Group commit for the embedded database. Its one connection runs transactions one after another
 * anyway, and a commit (appending the changed pages to the WAL) costs more than the statements of a
 * small write (a user upsert, an A2A task); so a unit waits one event-loop turn, units that arrive
 * meanwhile join it, and one transaction and one commit serve them all. Each unit still gets only
 * its own outcome: when any unit of a group throws, the group is rolled back and every unit re-runs
 * in a transaction of its own, so a unit must be pure database work, safe to run again after a
 * rollback.
 */
export function createGroupCommit(db: Kysely<Database>): WriteCommitter {
  const queue: Pending[] = [];
  let running = false;

  const runAlone = (p: Pending) => db.transaction().execute(p.work).then(p.resolve, p.reject);

  async function drain(): Promise<void> {
    while (queue.length > 0) {
      const group = queue.splice(0, MAX_GROUP);
      if (group.length === 1) {
        await runAlone(group[0]!);
        continue;
      }
      let results: unknown[] | undefined;
      try {
        results = await db.transaction().execute(async (trx) => {
          const out: unknown[] = [];
          for (const p of group) out.push(await p.work(trx));
          return out;
        });
      } catch {
        results = undefined;
      }
      if (results) group.forEach((p, i) => p.resolve(results[i]));
      else for (const p of group) await runAlone(p);
    }
    running = false;
  }

  function run<T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (running) return;
      running = true;
      setImmediate(() => void drain());
    });
  }
  return { run, runStatement: run };
}
