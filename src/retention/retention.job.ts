import type { Db } from '../db/database.js';
import { enqueueJob } from '../jobs/jobs.js';
import type { JobHandler } from '../jobs/job-types.js';
import type { Clock } from '../lib/clock.js';
import { enforceRetention, type RetentionDeps } from './enforce-retention.js';

declare module '../jobs/job-types.js' {
  interface JobPayloads {
    /** One retention pass (`enforce-retention.ts`); enqueued by every worker, run by one at a time. */
    'retention.enforce': Record<string, never>;
  }
}

const JOB_KEY = 'retention.enforce';

/** The retention pass as a job: it stops between chunks when its worker shuts down. */
export function createRetentionJobHandler(
  deps: RetentionDeps & { observeDefaultRows?: (table: string, rows: number) => void },
): JobHandler<'retention.enforce'> {
  return async (_payload, helpers) => {
    const report = await enforceRetention(helpers.db, { ...deps, logger: helpers.logger }, helpers.stopping);
    for (const [table, rows] of Object.entries(report.inDefault)) {
      deps.observeDefaultRows?.(table, rows);
      // Loud: such rows defeat partition pruning and whole-partition drops until a pass moves them.
      if (rows > 0)
        helpers.logger.error(
          { table, rows, partition: `${table}_default` },
          'rows of kept days are in the default partition: their day partitions could not be made (see the warnings above; the next pass tries again)',
        );
    }
    const deleted = Object.values(report.deleted).reduce((a, b) => a + b, 0);
    if (deleted > 0 || report.created.length > 0 || report.dropped.length > 0)
      helpers.logger.info(report, 'retention pass done');
  };
}

/**
 * Asks for a retention pass. The job key keeps one pass pending or running across all workers, so
 * N workers on one database enqueueing every interval still run one pass at a time.
 */
export function requestRetentionPass(db: Db, clock: Clock): Promise<string> {
  return enqueueJob(db, 'retention.enforce', {}, { jobKey: JOB_KEY, clock, maxAttempts: 3 });
}
