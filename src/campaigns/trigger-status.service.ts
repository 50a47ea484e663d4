import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import { getCampaign } from './campaigns.service.js';
import { decodeCursor, encodeCursor, parseLimit } from './pagination.js';
import { addCounters, emptyCounters, type TriggerCounters } from './trigger-counters.js';
import { batchCounters, findCampaignTrigger, listCampaignTriggers, type TriggerRecord } from './triggers.repository.js';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function summary(t: TriggerRecord) {
  return {
    trigger_id: t.id,
    campaign_id: t.campaignId,
    state: t.state,
    audience: 'broadcast' in t.audience ? { broadcast: true as const } : { targets: t.targets },
    properties: t.properties,
    created_at: iso(t.createdAt)!,
    started_at: iso(t.startedAt),
    finished_at: iso(t.finishedAt),
    ...(t.error !== null && { error: t.error }),
  };
}

export type TriggerSummary = ReturnType<typeof summary>;
export type TriggerStatus = TriggerSummary & {
  counters: TriggerCounters;
  progress: { batches_planned: number; batches_finished: number; planning_done: boolean };
};

/**
 * R16: the trigger's state and counters. Counters grow as batches close (each one range of about
 * 400 users, or the whole target list), so while a trigger runs they lag its sends by the batches
 * under way; `progress` says how many batches are planned and closed.
 */
export async function getTriggerStatus(
  db: Db,
  projectId: string,
  campaignId: string,
  triggerId: string,
): Promise<TriggerStatus> {
  const trigger = await findCampaignTrigger(db, projectId, campaignId, triggerId);
  if (!trigger) {
    await getCampaign(db, projectId, campaignId);
    throw new AppError(
      'not_found',
      'TRIGGER_NOT_FOUND',
      `Trigger ${triggerId} does not exist for campaign ${campaignId}`,
    );
  }
  const batches = await batchCounters(db, triggerId);
  const counters = emptyCounters();
  counters.targets = trigger.targets;
  for (const b of batches)
    if (b.state !== 'queued') addCounters(counters, { ...(b.counters as Partial<TriggerCounters> | null), targets: 0 });
  return {
    ...summary(trigger),
    counters,
    progress: {
      batches_planned: trigger.batchesPlanned,
      batches_finished: trigger.batchesFinished,
      planning_done: trigger.planningDone,
    },
  };
}

/** A campaign's triggers, newest first, with their state (counters: see the single-trigger view). */
export async function listTriggers(
  db: Db,
  projectId: string,
  campaignId: string,
  query: { limit?: string | undefined; cursor?: string | undefined },
) {
  await getCampaign(db, projectId, campaignId);
  const limit = parseLimit(query.limit);
  const after = decodeCursor(query.cursor);
  const rows = await listCampaignTriggers(
    db,
    projectId,
    campaignId,
    limit + 1,
    after && { createdAt: after[0] as number, id: after[1] as string },
  );
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    triggers: page.map(summary),
    next_cursor: rows.length > limit && last ? encodeCursor([last.createdAt, last.id]) : null,
  };
}
