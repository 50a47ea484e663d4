import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import type { JobHandler, JobKind, JobPayloads } from './job-types.js';
import { ensureKeyedJob } from './jobs.js';

/** Job kinds that fire rows due by a time (pending sends, held sends): one payload-less job per second. */
export type DueRowsKind = {
  [K in JobKind]: JobPayloads[K] extends Record<string, never> ? K : never;
}[JobKind];

/**
 * A due row's job runs no sooner than this after the row was stored, so the storing transaction
 * has committed before the job of its second looks (a job already running is reused by its key, and
 * would not see a row committed after its last claim).
 */
export const MIN_LEAD_MS = 2000;

/**
 * When the job that fires a row due at `dueAt` runs: the next whole second after it (at least
 * `MIN_LEAD_MS` after `now`). One job per kind and second with rows due, keyed by it, so 100,000 rows
 * due in one minute are at most 60 jobs, each claiming rows in batches.
 */
export const dueJobRunAt = (dueAt: number, now: number): number =>
  (Math.floor(Math.max(dueAt, now + MIN_LEAD_MS) / 1000) + 1) * 1000;

/** Makes sure the job of `kind` for second `runAt` exists; answers whether it existed before. */
export async function ensureDueJob(db: Db, clock: Clock, kind: DueRowsKind, runAt: number): Promise<boolean> {
  return ensureKeyedJob(db, kind, {}, { clock, runAt, jobKey: `${kind}:${runAt}` });
}

export interface DueRowsSource {
  /** Claims at most `limit` rows due by `now` and fires them, in the claiming transaction; returns how many. */
  claimAndFire(trx: Db, now: number, limit: number): Promise<number>;
  /** The instant the earliest unclaimed row is due, if any. */
  nextDueAt(db: Db): Promise<number | undefined>;
}

/**
 * The handler of a due-rows job: claims and fires due rows in transactions of `limit` until fewer
 * come back, then makes sure a next job takes any row stored late (its second's job already past its
 * last claim). Each row leaves its waiting state in the transaction that fires it, so it fires once
 * whatever the instances, crashes and retries.
 */
export function createDueRowsHandler<K extends DueRowsKind>(
  kind: K,
  deps: { clock: Clock; limit: number; source: DueRowsSource },
): JobHandler<K> {
  const { clock, limit, source } = deps;
  return async (_payload, helpers) => {
    for (;;) {
      if (helpers.signal.aborted || helpers.stopping.aborted)
        throw new Error(`stopped; the rows of ${kind} stay claimable`);
      const claimed = await helpers.db.transaction().execute((trx) => source.claimAndFire(trx, clock.now(), limit));
      if (claimed < limit) break;
      // SQLite answers synchronously: let requests and sends waiting on the event loop in between batches.
      await new Promise((resolve) => setImmediate(resolve));
    }
    const next = await source.nextDueAt(helpers.db);
    const now = clock.now();
    if (next !== undefined && next <= now) await ensureDueJob(helpers.db, clock, kind, dueJobRunAt(now, now));
  };
}
