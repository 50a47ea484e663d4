import type { Db } from '../../db/database.js';
import { experimentDefinition } from '../experiments/experiment.js';
import { createDueRowsHandler } from '../../jobs/due-rows.js';
import { enqueueJob } from '../../jobs/jobs.js';
import type { JobHandler } from '../../jobs/job-types.js';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { resolveTriggerRefs } from '../../conditions/resolve-trigger-refs.js';
import { findCampaign, type Campaign } from '../campaigns.repository.js';
import { BATCH_MAX_ATTEMPTS } from '../fanout/campaign-jobs.js';
import type { EventScope } from '../templates/templates.js';
import { addBatches, insertTrigger, markPlanningDone, startTrigger } from '../triggers/triggers.repository.js';
import { DUE_CLAIM_BATCH } from './due-sends.js';
import { sendPolicyToWire } from '../policies/send-policy.js';
import {
  cancelClaimedSends,
  claimDuePendingSends,
  fireClaimedSends,
  nextDueAt,
  type PendingSend,
} from './pending-sends.repository.js';

/**
 * Event properties carried by one trigger's definition, at most (JSON characters): a claim whose
 * events are larger fires into more triggers.
 */
const TRIGGER_EVENT_CHARS = 256 * 1024;

/**
 * `campaign.event-sends-due`: claims due pending sends in batches (rule `event-triggered-campaigns`)
 * and fires them in the claiming transaction: each campaign is read as it stands now (active, still
 * triggered by this event, else its sends are canceled), and the claim's sends of one campaign
 * become one trigger targeting their users, stored planned with its one batch and
 * `campaign.send-batch` job, each pending send marked `fired` with that trigger's id. So a pending
 * send fires once whatever the instances, crashes and retries (the row leaves `pending` in the
 * transaction that creates its trigger), and the trigger's ledger keeps each device to one accepted
 * send (rule `delivery-guarantee`), which is why a user's second send in one claim goes in another
 * trigger. The segment and audience conditions are evaluated for each user when the batch sends, a
 * few moments later.
 */
export function createDueSendsHandler(deps: {
  clock: Clock;
  claimBatch?: number;
}): JobHandler<'campaign.event-sends-due'> {
  return createDueRowsHandler('campaign.event-sends-due', {
    clock: deps.clock,
    limit: deps.claimBatch ?? DUE_CLAIM_BATCH,
    source: {
      async claimAndFire(trx, now, limit) {
        const due = await claimDuePendingSends(trx, now, limit);
        for (const sends of groupBy(due, (s) => `${s.projectId}\u0000${s.campaignId}`)) {
          const campaign = await findCampaign(trx, sends[0]!.projectId, sends[0]!.campaignId);
          await fireCampaignSends(trx, campaign, sends, now);
        }
        return due.length;
      },
      nextDueAt,
    },
  });
}

function groupBy<T>(items: T[], key: (item: T) => string): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return [...groups.values()];
}

/** The claim's sends of one campaign, as triggers of distinct users within the size bound. */
export function triggerParts(sends: PendingSend[], maxChars = TRIGGER_EVENT_CHARS): PendingSend[][] {
  const parts: Array<{ sends: PendingSend[]; users: Set<string>; chars: number }> = [];
  for (const send of sends) {
    const chars = JSON.stringify(send.eventProperties).length;
    let part = parts.find((p) => !p.users.has(send.userId) && (p.chars + chars <= maxChars || p.sends.length === 0));
    if (!part) parts.push((part = { sends: [], users: new Set(), chars: 0 }));
    part.sends.push(send);
    part.users.add(send.userId);
    part.chars += chars;
  }
  return parts.map((p) => p.sends);
}

async function fireCampaignSends(db: Db, campaign: Campaign | undefined, sends: PendingSend[], now: number) {
  const ids = (list: PendingSend[]) => list.map((s) => s.id);
  if (!campaign || campaign.status !== 'active') {
    await cancelClaimedSends(db, ids(sends), 'campaign_not_active', now);
    return;
  }
  const changed = sends.filter((s) => campaign.eventTrigger?.event !== s.eventName);
  await cancelClaimedSends(db, ids(changed), 'campaign_changed', now);
  const firing = changed.length === 0 ? sends : sends.filter((s) => campaign.eventTrigger?.event === s.eventName);
  for (const part of triggerParts(firing)) await fireTrigger(db, campaign, part, now);
}

async function fireTrigger(db: Db, campaign: Campaign, part: PendingSend[], now: number): Promise<void> {
  const triggerId = newId();
  const fired = await fireClaimedSends(
    db,
    part.map((s) => s.id),
    triggerId,
    now,
  );
  const sends = part.filter((s) => fired.has(s.id));
  if (sends.length === 0) return;
  const eventsByUser: Record<string, EventScope> = {};
  for (const s of sends)
    eventsByUser[s.userId] = {
      name: s.eventName,
      timestamp: new Date(s.eventTimestamp).toISOString(),
      properties: s.eventProperties,
    };
  await insertTrigger(db, {
    id: triggerId,
    projectId: campaign.projectId,
    campaignId: campaign.campaignId,
    definition: {
      campaignName: campaign.name,
      segment: campaign.segment,
      // An event-triggered send has no trigger properties (save time refuses conditions needing them).
      audienceConditions: campaign.audienceConditions && resolveTriggerRefs(campaign.audienceConditions, {}),
      message: campaign.message,
      topic: campaign.topic,
      eventsByUser,
      policy: sendPolicyToWire(campaign.sendPolicy),
      ...experimentDefinition(campaign),
    },
    audience: { targets: sends.map((s) => ({ user_id: s.userId })) },
    properties: {},
    targets: sends.length,
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
