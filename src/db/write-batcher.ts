import type { Kysely, Transaction } from 'kysely';
import type { Database } from './database.js';
import type { Dialect } from './dialect.js';

/** Runs a unit of database work in a transaction, possibly shared with other units. */
export interface WriteBatcher {
  run<T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T>;
}

interface Pending {
  work: (trx: Transaction<Database>) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** Each unit in its own transaction (PostgreSQL, where the server groups concurrent commits itself). */
export const separateTransactions = (db: Kysely<Database>): WriteBatcher => ({
  run: (work) => db.transaction().execute(work),
});

const MAX_BATCH = 64;

/** The batcher for a dialect: group commit on SQLite, plain transactions on PostgreSQL. */
export const writeBatcherFor = (db: Kysely<Database>, dialect: Dialect): WriteBatcher =>
  dialect === 'sqlite' ? createWriteBatcher(db) : separateTransactions(db);

/**
 * Group commit for the embedded database. Its one connection runs transactions one after another
 * anyway, and a commit (appending the changed pages to the WAL) costs more than the statements of a
 * small write (a user upsert, an A2A task); so a unit waits one event-loop turn, units that arrive
 * meanwhile join it, and one transaction and one commit serve them all. Each unit still gets only
 * its own outcome: when any unit of a batch throws, the batch is rolled back and every unit re-runs
 * in a transaction of its own, so a unit must be pure database work, safe to run again after a
 * rollback.
 */
export function createWriteBatcher(db: Kysely<Database>): WriteBatcher {
  const queue: Pending[] = [];
  let running = false;

  const runAlone = (p: Pending) => db.transaction().execute(p.work).then(p.resolve, p.reject);

  async function drain(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.splice(0, MAX_BATCH);
      if (batch.length === 1) {
        await runAlone(batch[0]!);
        continue;
      }
      let results: unknown[] | undefined;
      try {
        results = await db.transaction().execute(async (trx) => {
          const out: unknown[] = [];
          for (const p of batch) out.push(await p.work(trx));
          return out;
        });
      } catch {
        results = undefined;
      }
      if (results) batch.forEach((p, i) => p.resolve(results[i]));
      else for (const p of batch) await runAlone(p);
    }
    running = false;
  }

  return {
    run<T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
        if (running) return;
        running = true;
        setImmediate(() => void drain());
      });
    },
  };
}
