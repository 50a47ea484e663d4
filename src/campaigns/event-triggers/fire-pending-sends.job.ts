import type { Kysely } from 'kysely';
import type { Database, Db } from '../../db/database.js';
import { enqueueJob } from '../../jobs/jobs.js';
import type { JobHandler } from '../../jobs/job-types.js';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { resolveTriggerRefs } from '../../conditions/resolve-trigger-refs.js';
import { findCampaign, type Campaign } from '../campaigns.repository.js';
import { BATCH_MAX_ATTEMPTS } from '../fanout/campaign-jobs.js';
import { addBatches, insertTrigger, markPlanningDone, startTrigger } from '../triggers/triggers.repository.js';
import { DUE_CLAIM_BATCH, dueJobRunAt, enqueueDueJob } from './due-sends.js';
import { claimDuePendingSends, finishPendingSend, nextDueAt, type PendingSend } from './pending-sends.repository.js';

/**
 * `campaign.event-sends-due`: claims due pending sends in batches (rule `event-triggered-campaigns`)
 * and fires each in the claiming transaction: the campaign is read as it stands now (active, still
 * triggered by this event, else the send is canceled), and a trigger targeting the user is stored
 * planned, with its one batch and `campaign.send-batch` job, the pending send marked `fired` with its
 * id. So a pending send fires once whatever the instances, crashes and retries (the row leaves
 * `pending` in the transaction that creates its trigger), and the trigger's ledger keeps each device
 * to one accepted send (rule `delivery-guarantee`); the segment and audience conditions are
 * evaluated for the user when the batch sends, a few moments later.
 */
export function createDueSendsHandler(deps: {
  clock: Clock;
  claimBatch?: number;
}): JobHandler<'campaign.event-sends-due'> {
  const limit = deps.claimBatch ?? DUE_CLAIM_BATCH;
  return async (_payload, helpers) => {
    for (;;) {
      if (helpers.signal.aborted || helpers.stopping.aborted) throw new Error('stopped; the due sends stay claimable');
      const claimed = await helpers.db.transaction().execute(async (trx) => {
        const now = deps.clock.now();
        const due = await claimDuePendingSends(trx, now, limit);
        const campaigns = new Map<string, Campaign | undefined>();
        for (const send of due) {
          const key = `${send.projectId}\u0000${send.campaignId}`;
          if (!campaigns.has(key)) campaigns.set(key, await findCampaign(trx, send.projectId, send.campaignId));
          await fire(trx, send, campaigns.get(key), now);
        }
        return due.length;
      });
      if (claimed < limit) break;
      // SQLite answers synchronously: let requests and sends waiting on the event loop in between batches.
      await new Promise((resolve) => setImmediate(resolve));
    }
    // A send stored late (its job of that second already past its last claim) is taken by a next job.
    await followUp(helpers.db, deps.clock);
  };
}

async function followUp(db: Kysely<Database>, clock: Clock): Promise<void> {
  const next = await nextDueAt(db);
  if (next === undefined) return;
  const now = clock.now();
  if (next <= now) await enqueueDueJob(db, clock, dueJobRunAt(now, now));
}

async function fire(db: Db, send: PendingSend, campaign: Campaign | undefined, now: number): Promise<void> {
  if (!campaign || campaign.status !== 'active') {
    await finishPendingSend(db, send.id, { state: 'canceled', reason: 'campaign_not_active' }, now);
    return;
  }
  if (campaign.eventTrigger?.event !== send.eventName) {
    await finishPendingSend(db, send.id, { state: 'canceled', reason: 'campaign_changed' }, now);
    return;
  }
  const triggerId = newId();
  if (!(await finishPendingSend(db, send.id, { state: 'fired', triggerId }, now))) return;
  await insertTrigger(db, {
    id: triggerId,
    projectId: send.projectId,
    campaignId: send.campaignId,
    definition: {
      campaignName: campaign.name,
      segment: campaign.segment,
      // An event-triggered send has no trigger properties (save time refuses conditions needing them).
      audienceConditions: campaign.audienceConditions && resolveTriggerRefs(campaign.audienceConditions, {}),
      message: campaign.message,
      topic: campaign.topic,
      event: {
        name: send.eventName,
        timestamp: new Date(send.eventTimestamp).toISOString(),
        properties: send.eventProperties,
      },
      pendingSendId: send.id,
    },
    audience: { targets: [{ user_id: send.userId }] },
    properties: {},
    targets: 1,
    createdAt: now,
  });
  await addBatches(db, triggerId, [{ batchNo: 0, after: null, upto: null }], null, now);
  await startTrigger(db, triggerId, now);
  await markPlanningDone(db, triggerId);
  await enqueueJob(
    db,
    'campaign.send-batch',
    { triggerId, batchNo: 0 },
    { clock: { now: () => now }, runAt: now, maxAttempts: BATCH_MAX_ATTEMPTS },
  );
}
