/**
 * The fan-out's job kinds (rule `transactional-jobs`). `campaign.plan` splits a trigger's audience into batches and
 * enqueues one `campaign.send-batch` per batch, in the transaction that records the batch.
 */
declare module '../../jobs/job-types.js' {
  interface JobPayloads {
    'campaign.plan': { triggerId: string };
    'campaign.send-batch': { triggerId: string; batchNo: number };
  }
}

/** Users per broadcast batch: about 1,000-2,000 devices at one or two devices per user (per-batch costs, a job claim and the batch close, amortised; the batch's recipients are held while it sends). */
export const BATCH_USERS = 1000;
/** Batches planned per transaction. */
export const PLAN_CHUNK = 25;
/** A batch job retries with backoff (about an hour in all) before it is counted as failed. */
export const BATCH_MAX_ATTEMPTS = 12;
