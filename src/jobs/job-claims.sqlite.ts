import { claimPendingJobs, type JobClaims } from './job-store.js';
import { wakeLocalJobRunners } from './job-wakeups.js';

/**
 * SQLite: one `UPDATE ... RETURNING` statement is its own write transaction. SQLite takes the
 * write lock when the statement starts (other processes wait on `busy_timeout`), so the rows the
 * subquery picks cannot be claimed by anyone else before they are updated.
 */
export const sqliteJobClaims: JobClaims = {
  claimJobs: (db, request) => claimPendingJobs(db, request, false),

  // No wake-up channel between processes: a runner in this process is woken directly, others poll.
  async notifyJobsEnqueued(db) {
    wakeLocalJobRunners(db);
  },
};
