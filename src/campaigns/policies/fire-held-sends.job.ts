import type { Db } from '../../db/database.js';
import { experimentDefinition } from '../experiments/experiment.js';
import { winnerDefinition } from '../experiments/winner-send.js';
import { createDueRowsHandler } from '../../jobs/due-rows.js';
import { enqueueJob } from '../../jobs/jobs.js';
import type { JobHandler } from '../../jobs/job-types.js';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { resolveTriggerRefs } from '../../conditions/resolve-trigger-refs.js';
import { findCampaign } from '../campaigns.repository.js';
import type { EventScope } from '../templates/templates.js';
import { BATCH_MAX_ATTEMPTS } from '../fanout/campaign-jobs.js';
import { sendPolicyToWire } from './send-policy.js';
import {
  addBatches,
  findTrigger,
  insertTrigger,
  markPlanningDone,
  startTrigger,
} from '../triggers/triggers.repository.js';
import { claimDueHeldSends, finishHeldSends, nextHeldDueAt, type HeldSend } from './held-sends.repository.js';

/** Held sends claimed per transaction; they become at most this many targets of one trigger. */
export const HELD_CLAIM_BATCH = 200;

/**
 * `campaign.held-sends-due` (rule `quiet-hours`): claims due held sends in batches, the same way
 * pending sends of event-triggered campaigns fire: in the claiming transaction, the held sends of
 * one source trigger become one planned trigger targeting their users, built from the campaign as
 * it stands now (still active, else they are canceled; its segment and audience conditions are
 * evaluated when the batch sends, with the source trigger's properties) and marked `fired` with its
 * id. A held send leaves `held` in the transaction that makes its trigger, so it fires once
 * whatever the instances, crashes and retries.
 */
export function createHeldSendsHandler(deps: {
  clock: Clock;
  claimBatch?: number;
}): JobHandler<'campaign.held-sends-due'> {
  return createDueRowsHandler('campaign.held-sends-due', {
    clock: deps.clock,
    limit: deps.claimBatch ?? HELD_CLAIM_BATCH,
    source: {
      async claimAndFire(trx, now, limit) {
        const due = await claimDueHeldSends(trx, now, limit);
        const bySource = new Map<string, HeldSend[]>();
        for (const h of due) bySource.set(h.sourceTriggerId, [...(bySource.get(h.sourceTriggerId) ?? []), h]);
        for (const group of bySource.values()) await fire(trx, group, now);
        return due.length;
      },
      nextDueAt: nextHeldDueAt,
    },
  });
}

async function fire(db: Db, group: HeldSend[], now: number): Promise<void> {
  const first = group[0]!;
  const ids = group.map((h) => h.id);
  const campaign = await findCampaign(db, first.projectId, first.campaignId);
  if (!campaign || campaign.status !== 'active') {
    await finishHeldSends(db, ids, { state: 'canceled', reason: 'campaign_not_active' }, now);
    return;
  }
  const source = await findTrigger(db, first.sourceTriggerId);
  if (!source || source.state === 'canceled') {
    await finishHeldSends(db, ids, { state: 'canceled', reason: 'trigger_canceled' }, now);
    return;
  }
  const triggerId = newId();
  await finishHeldSends(db, ids, { state: 'fired', triggerId }, now);
  await insertTrigger(db, {
    id: triggerId,
    projectId: first.projectId,
    campaignId: first.campaignId,
    definition: {
      campaignName: campaign.name,
      segment: campaign.segment,
      audienceConditions:
        campaign.audienceConditions && resolveTriggerRefs(campaign.audienceConditions, source.properties),
      message: campaign.message,
      // Rule `quiet-hours`: a held send passes the topic, caps and re-eligibility gates when it goes.
      topic: campaign.topic,
      policy: sendPolicyToWire(campaign.sendPolicy),
      ...experimentDefinition(campaign),
      ...(await winnerDefinition(db, source, now)), // rule `campaign-experiments`
      ...(source.definition.event && { event: source.definition.event }),
      ...(source.definition.eventsByUser && { eventsByUser: eventsOf(source.definition.eventsByUser, group) }),
      heldFrom: source.id,
    },
    audience: { targets: group.map((h) => ({ user_id: h.userId })) },
    properties: source.properties,
    targets: group.length,
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

/** The held users' events of an event-triggered source trigger (`event.*` in their templates). */
function eventsOf(byUser: Record<string, EventScope>, group: HeldSend[]): Record<string, EventScope> {
  const out: Record<string, EventScope> = {};
  for (const h of group) if (byUser[h.userId]) out[h.userId] = byUser[h.userId]!;
  return out;
}
