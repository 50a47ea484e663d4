import type { Db } from '../../db/database.js';
import { AppError } from '../../errors.js';
import { findCampaign, getCampaign } from '../campaigns.service.js';
import { expectedEndAt } from '../policies/send-rate.js';
import { decodeCursor, encodeCursor, parseLimit } from '../../lib/pagination.js';
import { addCounters, emptyCounters, type TriggerCounters } from './trigger-counters.js';
import { ledgerPage, ledgerRecipient } from './trigger-deliveries.repository.js';
import { triggerOpenCount } from '../../push/message-opens.service.js';
import { countConversions, goalConversions } from '../conversions/conversions.repository.js';
import { localTimeStatus, type LocalTimeStatus } from './local-time-status.js';
import { batchCounters, findCampaignTrigger, listCampaignTriggers, type TriggerRecord } from './triggers.repository.js';

/** The trigger, or a 404 naming the campaign when it is missing and else the trigger. */
async function existingTrigger(db: Db, projectId: string, campaignId: string, triggerId: string) {
  const trigger = await findCampaignTrigger(db, projectId, campaignId, triggerId);
  if (trigger) return trigger;
  await getCampaign(db, projectId, campaignId);
  throw new AppError(
    'not_found',
    'TRIGGER_NOT_FOUND',
    `Trigger ${triggerId} does not exist for campaign ${campaignId}`,
  );
}

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
    scheduled_at: iso(t.scheduledAt),
    // Users created up to this instant are the audience; segment and conditions are read when each batch sends.
    audience_evaluated_at: iso(t.snapshotAt)!,
    ...(t.error !== null && { error: t.error }),
    ...(t.scheduleId !== null && { schedule_id: t.scheduleId, occurrence_at: iso(t.occurrenceAt)! }),
  };
}

export type TriggerSummary = ReturnType<typeof summary>;
export type TriggerStatus = TriggerSummary & {
  counters: TriggerCounters;
  progress: { batches_planned: number; batches_finished: number; planning_done: boolean };
} & Partial<LocalTimeStatus> & { expected_end_at?: string };

/** Rule `conversion-goals`: the trigger's conversions per goal of the campaign (none when it has no goals and no conversions). */
async function triggerConversions(db: Db, projectId: string, campaignId: string, triggerId: string) {
  const campaign = await findCampaign(db, projectId, campaignId);
  const goals = (campaign?.conversionGoals ?? []).map((g) => g.event);
  return goalConversions(goals, await countConversions(db, { triggerId }));
}

/** Rule `send-rate-limits`: a rate-limited trigger under way says when it should end. */
async function rateStatus(db: Db, trigger: TriggerRecord, counters: TriggerCounters) {
  if (!['queued', 'running', 'scheduled'].includes(trigger.state)) return {};
  const campaign = await findCampaign(db, trigger.projectId, trigger.campaignId);
  const end = await expectedEndAt(db, trigger, campaign, counters);
  return end === undefined ? {} : { expected_end_at: new Date(end).toISOString() };
}

/**
 * Rule `trigger-status`: the trigger's state and counters. Counters grow as batches close (each one range of about
 * 400 users, or the whole target list), so while a trigger runs they lag its sends by the batches
 * under way; `progress` says how many batches are planned and closed.
 */
export async function getTriggerStatus(
  db: Db,
  projectId: string,
  campaignId: string,
  triggerId: string,
): Promise<TriggerStatus> {
  const trigger = await existingTrigger(db, projectId, campaignId, triggerId);
  const batches = await batchCounters(db, triggerId);
  const counters = emptyCounters();
  counters.targets = trigger.targets;
  for (const b of batches)
    if (b.state !== 'queued') addCounters(counters, { ...(b.counters as Partial<TriggerCounters> | null), targets: 0 });
  counters.opened = await triggerOpenCount(db, triggerId);
  const conversions = await triggerConversions(db, projectId, campaignId, triggerId);
  if (conversions.length > 0) counters.conversions = conversions;
  return {
    ...summary(trigger),
    counters,
    progress: {
      batches_planned: trigger.batchesPlanned,
      batches_finished: trigger.batchesFinished,
      planning_done: trigger.planningDone,
    },
    ...(trigger.localSchedule && (await localTimeStatus(db, trigger, batches))),
    ...(await rateStatus(db, trigger, counters)),
  };
}

/** A campaign's triggers, newest first, with their state (counters: see the single-trigger view); `state: 'scheduled'` keeps those waiting for their `at`. */
export async function listTriggers(
  db: Db,
  projectId: string,
  campaignId: string,
  query: { limit?: string | undefined; cursor?: string | undefined; state?: 'scheduled' | undefined },
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
    query.state === 'scheduled',
  );
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    triggers: page.map(summary),
    next_cursor: rows.length > limit && last ? encodeCursor([last.createdAt, last.id]) : null,
  };
}

/**
 * One page of a trigger's outcomes, one per device it reached (accepted, failed or skipped), in
 * device id order: where each message id of a trigger can be found. `next_cursor` continues it.
 */
export async function listTriggerDeliveries(
  db: Db,
  projectId: string,
  campaignId: string,
  triggerId: string,
  query: { limit?: string | undefined; cursor?: string | undefined },
) {
  const limit = parseLimit(query.limit);
  const after = decodeDeviceCursor(query.cursor);
  const trigger = await existingTrigger(db, projectId, campaignId, triggerId);
  const rows = await ledgerPage(db, trigger, limit + 1, after);
  const page = rows.slice(0, limit);
  return {
    deliveries: page.map((r) => ({
      device_id: r.device_id,
      project_user_id: r.project_user_id,
      provider: r.provider,
      status: r.status,
      failure_reason: r.failure_reason,
      ...(r.detail !== null && { detail: r.detail }),
      message_id: r.message_id,
      created_at: iso(Number(r.created_at))!,
    })),
    next_cursor: rows.length > limit ? Buffer.from(page[page.length - 1]!.device_id).toString('base64url') : null,
  };
}

function decodeDeviceCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  const deviceId = Buffer.from(cursor, 'base64url').toString('utf8');
  // Device ids are printable ASCII without spaces, 1-255 characters (the device schema); the app may choose them.
  if (!/^[\x21-\x7e]{1,255}$/.test(deviceId))
    throw new AppError('invalid', 'INVALID_CURSOR', 'cursor is not one this server returned');
  return deviceId;
}

/** The campaign and recipient user of a trigger's send to a device (what an open of the message records). */
export const campaignMessageRecipient = ledgerRecipient;
