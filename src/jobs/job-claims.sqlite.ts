import { sql } from 'kysely';
import type { JobClaims } from './job-store.js';
import { wakeLocalJobRunners } from './job-wakeups.js';

/**
 * SQLite: one `UPDATE ... RETURNING` statement is its own write transaction. SQLite takes the
 * write lock when the statement starts (other processes wait on `busy_timeout`), so the rows the
 * subquery picks cannot be claimed by anyone else before they are updated.
 */
export const sqliteJobClaims: JobClaims = {
  async claimJobs(db, { lockToken, now, leaseMs, limit, kinds }) {
    if (kinds.length === 0 || limit <= 0) return [];
    return db
      .updateTable('jobs')
      .set({ state: 'running', attempts: sql`attempts + 1`, locked_by: lockToken, locked_until: now + leaseMs, updated_at: now })
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('jobs')
          .select('id')
          .where('state', '=', sql.lit('pending'))
          .where('run_at', '<=', now)
          .where('kind', 'in', kinds)
          .orderBy('run_at')
          .limit(limit),
      )
      .returningAll()
      .execute();
  },

  // No wake-up channel between processes: a runner in this process is woken directly, others poll.
  async notifyJobsEnqueued(db) {
    wakeLocalJobRunners(db);
  },
};
