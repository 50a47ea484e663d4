import type { Db } from '../../db/database.js';
import { ensureDueJob } from '../../jobs/due-rows.js';
import type { Clock } from '../../lib/clock.js';

declare module '../../jobs/job-types.js' {
  interface JobPayloads {
    /** Fires every held send due by now, in batches (whichever second's job runs first takes them). */
    'campaign.held-sends-due': Record<string, never>;
  }
}

/** Makes sure the job of second `runAt` (`dueJobRunAt`) will fire the held sends due by then. */
export async function enqueueHeldSendsJob(db: Db, clock: Clock, runAt: number): Promise<void> {
  await ensureDueJob(db, clock, 'campaign.held-sends-due', runAt);
}
