import { sql } from 'kysely';
import { claimPendingJobs, type JobClaims } from './job-store.js';

/** The channel `pg_notify` wakes workers on (S3). Database-wide, so deployments sharing a database share wake-ups (harmless: a wake-up only triggers a claim). */
export const JOBS_CHANNEL = 'herald_jobs';

/**
 * PostgreSQL: one statement. `FOR UPDATE SKIP LOCKED` makes concurrent workers pass over rows
 * another claim has locked instead of waiting for it, so no two claims take the same job and none
 * block each other. Expired leases are handed back to `pending` first (`rescueExpiredJobs`).
 */
export const postgresJobClaims: JobClaims = {
  claimJobs: (db, request) => claimPendingJobs(db, request, true),

  async notifyJobsEnqueued(db) {
    // Delivered on commit and dropped on rollback; identical notices in one transaction fold into one.
    await sql`select pg_notify(${JOBS_CHANNEL}, '')`.execute(db);
  },
};
