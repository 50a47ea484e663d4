import type { Db } from '../../db/database.js';
import { ensureKeyedJob } from '../../jobs/jobs.js';
import type { Clock } from '../../lib/clock.js';
import { dueJobRunAt } from '../event-triggers/due-sends.js';

declare module '../../jobs/job-types.js' {
  interface JobPayloads {
    /** Fires every held send due by now, in batches (whichever second's job runs first takes them). */
    'campaign.held-sends-due': Record<string, never>;
  }
}

/** When the job firing a held send due at `dueAt` runs: the same per-second rule as pending sends. */
export const heldJobRunAt = dueJobRunAt;

export async function enqueueHeldSendsJob(db: Db, clock: Clock, runAt: number): Promise<void> {
  await ensureKeyedJob(db, 'campaign.held-sends-due', {}, { clock, runAt, jobKey: `campaign.held-sends-due:${runAt}` });
}
