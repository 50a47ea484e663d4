import type { Db } from '../../db/database.js';
import { ensureKeyedJob } from '../../jobs/jobs.js';
import type { Clock } from '../../lib/clock.js';

declare module '../../jobs/job-types.js' {
  interface JobPayloads {
    /** Fires every pending send due by now, in batches (whichever second's job runs first takes them). */
    'campaign.event-sends-due': Record<string, never>;
  }
}

/** Pending sends claimed per transaction by the due-sends job. */
export const DUE_CLAIM_BATCH = 200;
/**
 * A pending send's job runs no sooner than this after the send was stored, so the storing
 * transaction has committed before the job of its second looks (a job already running is reused by
 * its key, and would not see a row committed after its last claim).
 */
export const MIN_LEAD_MS = 2000;

/**
 * When the job that fires a send due at `dueAt` runs: the next whole second after it (at least
 * `MIN_LEAD_MS` after `now`). One job per second with sends due, keyed by it, so 100,000 sends due in
 * one minute are at most 60 jobs, each claiming rows in batches.
 */
export const dueJobRunAt = (dueAt: number, now: number): number =>
  (Math.floor(Math.max(dueAt, now + MIN_LEAD_MS) / 1000) + 1) * 1000;

export const dueJobKey = (runAt: number): string => `campaign.event-sends-due:${runAt}`;

export async function enqueueDueJob(db: Db, clock: Clock, runAt: number): Promise<void> {
  await ensureKeyedJob(db, 'campaign.event-sends-due', {}, { clock, runAt, jobKey: dueJobKey(runAt) });
}
