import type { Db } from '../../db/database.js';
import { ensureDueJob } from '../../jobs/due-rows.js';
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
 * Makes sure the job of second `runAt` (`dueJobRunAt`) will fire the pending sends due by then;
 * answers whether it existed before (committed by another transaction, or earlier in this one).
 */
export async function enqueueDueJob(db: Db, clock: Clock, runAt: number): Promise<boolean> {
  return ensureDueJob(db, clock, 'campaign.event-sends-due', runAt);
}
