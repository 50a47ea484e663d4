import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import type { JobHandler, JobHandlers, JobHelpers } from '../jobs/job-types.js';
import { RetryJobError } from '../jobs/jobs.js';
import { sendToDevices, type DeviceSend } from '../push/push-dispatch.js';
import type { PushRuntime } from '../push/push-runtime.js';
import { DeliveryStatus, type DeviceSendOutcome } from '../push/push.types.js';
import { broadcastSlice, compileTriggerConditions, targetsSlice, type CompiledConditions, type Recipient } from './audience.js';
import { createPlanHandler } from './campaign-plan.job.js';
import { findCampaign } from './campaigns.service.js';
import { parseMessageTemplate, renderMessage, RenderFailure, type ParsedMessage } from './templates.js';
import { addCounters, addDeliveryCounts, emptyCounters } from './trigger-counters.js';
import { countDeliveries, recordDeliveries, recordedDevices, type TriggerDeliveriesTable } from './trigger-deliveries.repository.js';
import { cancelTrigger, completeTriggerIfDone, findBatch, findTrigger, finishBatch, type TriggerRecord } from './triggers.repository.js';

/** The campaign job handlers, for `createJobHandlers` (S2). */
export function createCampaignJobHandlers(deps: FanoutDeps): Pick<JobHandlers, 'campaign.plan' | 'campaign.send-batch'> {
  return { 'campaign.plan': createPlanHandler(deps), 'campaign.send-batch': createSendBatchHandler(deps) };
}

export interface FanoutDeps {
  push: PushRuntime;
  clock: Clock;
  logger?: Logger;
  /** Devices per `sendToDevices` call; its outcomes are recorded as soon as it returns (default 100). */
  sendChunk?: number;
  /** Calls under way at once per batch (default 2). Sends not yet recorded at a crash are at most `sendChunk * chunksInFlight` per running batch. */
  chunksInFlight?: number;
  /** Budget of one `sendToDevices` call, retries included (default 60 s). */
  sendDeadlineMs?: number;
  /** Users per broadcast batch (default `BATCH_USERS`). */
  batchUsers?: number;
  /** How long after the trigger sends that failed for a passing reason are retried before they are recorded (default one hour, `CAMPAIGN_RETRY_WINDOW_MS`). */
  retryWindowMs?: number;
}

const DEFAULT_RETRY_WINDOW_MS = 3_600_000;
/** Longest wait between two runs of a batch that retries passing failures. */
const MAX_RETRY_DELAY_MS = 10 * 60_000;

interface Prepared {
  conditions: CompiledConditions;
  message: ParsedMessage;
}

/**
 * Sends one batch of a trigger. The batch's audience is read now (send-time evaluation against the
 * primary store, C2) within its planned range; devices that already have an outcome for this
 * trigger are skipped, so a retried or resumed batch never repeats a recorded send (C4). Outcomes
 * are recorded per `sendToDevices` call, and the batch is closed (its counters written) only after
 * all of them are.
 */
export function createSendBatchHandler(deps: FanoutDeps): JobHandler<'campaign.send-batch'> {
  const cache = new Map<string, Prepared>();
  const prepare = (db: Db, trigger: TriggerRecord): Prepared => {
    let prepared = cache.get(trigger.id);
    if (!prepared) {
      prepared = { conditions: compileTriggerConditions(db, trigger.definition, trigger.createdAt), message: parseMessageTemplate(trigger.definition.message) };
      if (cache.size >= 64) cache.delete(cache.keys().next().value!);
      cache.set(trigger.id, prepared);
    }
    return prepared;
  };

  return async ({ triggerId, batchNo }, helpers) => {
    const { db } = helpers;
    const [trigger, batch] = await Promise.all([findTrigger(db, triggerId), findBatch(db, triggerId, batchNo)]);
    if (!trigger || !batch || batch.state !== 'queued') return;
    const close = (state: 'done' | 'failed' | 'canceled', counters: unknown) =>
      db.transaction().execute(async (trx) => {
        if (await finishBatch(trx, triggerId, batchNo, state, counters, deps.clock.now())) await completeTriggerIfDone(trx, triggerId, deps.clock.now());
      });

    const campaign = trigger.state === 'canceled' ? undefined : await findCampaign(db, trigger.projectId, trigger.campaignId);
    if (!campaign || campaign.status !== 'active') {
      await cancelTrigger(db, triggerId, `campaign is ${campaign?.status ?? 'no longer active'}`, deps.clock.now());
      await close('canceled', null);
      return;
    }

    let deviceIds: string[] = [];
    try {
      const prepared = prepare(db, trigger);
      const slice =
        'targets' in trigger.audience
          ? await targetsSlice(db, trigger.projectId, trigger.audience.targets, prepared.conditions)
          : await broadcastSlice(db, trigger.projectId, { after: batch.after_user_id, upto: batch.upto_user_id }, trigger.snapshotAt, prepared.conditions);
      deviceIds = slice.recipients.flatMap((r) => r.devices.map((d) => d.deviceId));
      await sendBatch(deps, helpers, trigger, batchNo, prepared, slice.recipients, await recordedDevices(db, triggerId, deviceIds));
      const counters = addDeliveryCounts(addCounters(emptyCounters(), slice.counters), await countDeliveries(db, triggerId, deviceIds));
      await close('done', counters);
    } catch (error) {
      if (helpers.attempt < helpers.maxAttempts || helpers.signal.aborted) throw error;
      deps.logger?.error({ err: error, triggerId, batchNo }, 'campaign batch failed its last attempt');
      await close('failed', addDeliveryCounts(emptyCounters(), await countDeliveries(db, triggerId, deviceIds), true));
    }
  };
}

async function sendBatch(deps: FanoutDeps, helpers: JobHelpers, trigger: TriggerRecord, batchNo: number, prepared: Prepared, recipients: Recipient[], done: Set<string>): Promise<void> {
  const { db } = helpers;
  const now = deps.clock.now();
  const row = (d: { deviceId: string; userId: string }, fields: Pick<TriggerDeliveriesTable, 'status' | 'message_id' | 'failure_reason' | 'token_action' | 'detail'>): TriggerDeliveriesTable => ({
    trigger_id: trigger.id,
    device_id: d.deviceId,
    batch_no: batchNo,
    user_id: d.userId,
    created_at: now,
    ...fields,
  });
  const sends: DeviceSend[] = [];
  const skipped: TriggerDeliveriesTable[] = [];
  const campaign = { campaign_id: trigger.campaignId, name: trigger.definition.campaignName };
  for (const { user, devices } of recipients) {
    const pending = devices.filter((d) => !done.has(d.deviceId));
    if (pending.length === 0) continue;
    try {
      const rendered = renderMessage(prepared.message, { trigger: trigger.properties, user: { ...user.properties, project_user_id: user.projectUserId }, campaign });
      const message = { ...rendered, data: { herald_campaign_id: trigger.campaignId, herald_trigger_id: trigger.id } };
      for (const device of pending) sends.push({ device, message, refs: { triggerId: trigger.id } });
    } catch (error) {
      if (!(error instanceof RenderFailure)) throw error;
      for (const d of pending) skipped.push(row(d, { status: DeliveryStatus.SKIPPED, message_id: null, failure_reason: error.reason, token_action: null, detail: error.message }));
    }
  }
  await recordDeliveries(db, skipped);

  // A send that failed for a passing reason (retries exhausted, provider quota) is left out of the
  // ledger until the batch's last attempt, so the batch's next run tries it again.
  const elapsed = deps.clock.now() - trigger.createdAt;
  const window = deps.retryWindowMs ?? DEFAULT_RETRY_WINDOW_MS;
  const lastAttempt = helpers.attempt >= helpers.maxAttempts || elapsed >= window;
  let postponed = 0;
  const record = (outcomes: DeviceSendOutcome[], sent: DeviceSend[]) => {
    const rows = outcomes.flatMap((o, i) => {
      if (!lastAttempt && TRANSIENT.has(o.status)) {
        postponed++;
        return [];
      }
      return [row(sent[i]!.device, { status: o.status, message_id: o.messageId, failure_reason: o.failureReason ?? null, token_action: o.tokenAction ?? null, detail: null })];
    });
    return recordDeliveries(db, rows);
  };
  const chunk = deps.sendChunk ?? 100;
  let next = 0;
  const worker = async () => {
    while (next < sends.length && !helpers.signal.aborted) {
      const part = sends.slice(next, (next += chunk));
      await record(await sendToDevices(deps.push, db, trigger.projectId, part, { deadlineMs: deps.sendDeadlineMs ?? 60_000 }), part);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, deps.chunksInFlight ?? 2) }, worker));
  if (helpers.signal.aborted) throw new Error('batch interrupted; unsent devices are sent when it runs again');
  // Retried for the whole window, not a number of attempts: waits grow with the time already spent
  // (so they double), never past the window's end, and provider quota holds are honoured by the sends.
  const delayMs = Math.max(0, Math.min(Math.max(1000, elapsed), MAX_RETRY_DELAY_MS, window - elapsed));
  if (postponed > 0) throw new RetryJobError({ delayMs, reason: `${postponed} sends failed for a passing reason; the batch retries them` });
}

const TRANSIENT = new Set<string>([DeliveryStatus.FAILED, DeliveryStatus.RATE_LIMITED]);
