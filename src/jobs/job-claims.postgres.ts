import { sql } from 'kysely';
import type { JobClaims } from './job-store.js';

/** The channel `pg_notify` wakes workers on (S3). Database-wide, so deployments sharing a database share wake-ups (harmless: a wake-up only triggers a claim). */
export const JOBS_CHANNEL = 'herald_jobs';

/**
 * PostgreSQL: one statement. `FOR UPDATE SKIP LOCKED` makes concurrent workers pass over rows
 * another claim has locked instead of waiting for it, so no two claims take the same job and none
 * block each other. Expired leases are handed back to `pending` first (`rescueExpiredJobs`).
 */
export const postgresJobClaims: JobClaims = {
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
          .limit(limit)
          .forUpdate()
          .skipLocked(),
      )
      .returningAll()
      .execute();
  },

  async notifyJobsEnqueued(db) {
    // Delivered on commit and dropped on rollback; identical notices in one transaction fold into one.
    await sql`select pg_notify(${JOBS_CHANNEL}, '')`.execute(db);
  },
};
