import type { Logger } from 'pino';
import { LRUCache } from 'lru-cache';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import type { JobHandler, JobHandlers, JobHelpers } from '../../jobs/job-types.js';
import { RetryJobError } from '../../jobs/jobs.js';
import { deliveryRow, SEND_ABORTED, sendToDevices } from '../../push/push-dispatch.js';
import type { PushRuntime } from '../../push/push-runtime.js';
import { Semaphore } from '../../push/semaphore.js';
import { DeliveryStatus, type DeviceSend, type DeviceSendOutcome } from '../../push/push.types.js';
import { deliveryNotice } from '../../push/delivery-notices.js';
import { DELIVERY_NOTICE_TYPES } from '../../push/notice-outbox.js';
import { endTrigger, unsentNotice } from '../triggers/end-trigger.js';
import {
  broadcastSlice,
  compileTriggerConditions,
  targetsSlice,
  type CompiledConditions,
  type Recipient,
  type WaveFilter,
} from './audience.js';
import { waveMember } from './local-time-waves.js';
import { assignmentOf, splitRecipients } from '../experiments/experiment-split.js';
import { CONTROL, CONTROL_SKIP_REASON, NO_WINNER_SKIP_REASON } from '../experiments/experiment.js';
import { holdForWinner } from '../experiments/winner-send.js';
import type { MessageTemplate } from '../templates/templates.js';
import { gateRecipients } from '../policies/send-gate.js';
import { releaseUnusedSlots } from '../policies/send-log.repository.js';
import { listWaves, type Wave } from '../triggers/trigger-waves.repository.js';
import { createPlanHandler } from './campaign-plan.job.js';
import { createDueSendsHandler } from '../event-triggers/fire-pending-sends.job.js';
import { createHeldSendsHandler } from '../policies/fire-held-sends.job.js';
import { holdQuietRecipients } from '../policies/quiet-hours-gate.js';
import { createPacer, type Pacer } from '../policies/send-rate.js';
import { findCampaign } from '../campaigns.service.js';
import type { TemplateRenderer } from '../templates/render-pool.js';
import { messageReadsUser } from '../templates/template-reads.js';
import { renderLocalized } from '../templates/render-localized.js';
import type { RenderOutcome } from '../templates/render-chunk.js';
import { parseMessageTemplate, type ParsedMessage } from '../templates/templates.js';
import { foldDeliveryCounts } from '../analytics/delivery-analytics.repository.js';
import { foldOutcomeCounts } from '../results/outcome-rollups.repository.js';
import { createOutcomeCommitter, GROUP_ROWS, type OutcomeCommitter } from './outcome-committer.js';
import { addCounters, addDeliveryCounts, emptyCounters, type TriggerCounters } from '../triggers/trigger-counters.js';
import { triggerCanceled } from '../triggers/trigger-schedule.repository.js';
import {
  countDeliveries,
  recordDeliveries,
  recordedDevices,
  type TriggerDeliveriesTable,
} from '../triggers/trigger-deliveries.repository.js';
import {
  cancelTrigger,
  completeTriggerIfDone,
  findBatch,
  findTrigger,
  finishBatch,
  type TriggerRecord,
} from '../triggers/triggers.repository.js';

/** The campaign job handlers; `herald.ts` composes them into `herald.jobHandlers`. */
export function createCampaignJobHandlers(
  deps: FanoutDeps,
): Pick<JobHandlers, 'campaign.plan' | 'campaign.send-batch' | 'campaign.event-sends-due' | 'campaign.held-sends-due'> {
  return {
    'campaign.plan': createPlanHandler({ ...deps, notices: deps.push.notices }),
    'campaign.send-batch': createSendBatchHandler(deps),
    'campaign.event-sends-due': createDueSendsHandler(deps),
    'campaign.held-sends-due': createHeldSendsHandler(deps),
  };
}

export interface FanoutDeps {
  push: PushRuntime;
  /** Renders each batch's messages in worker threads, off the event loop. */
  templates: TemplateRenderer;
  clock: Clock;
  logger?: Logger;
  /** Devices per `sendToDevices` call; its outcomes are recorded as soon as it returns (default 100). */
  sendChunk?: number;
  /** Calls under way at once per batch (default 2). Sends not yet recorded at a crash: those under way (at most the HTTP/2 pool's streams, process-wide) plus fewer than `GROUP_ROWS` awaiting their commit. */
  chunksInFlight?: number;
  /** Budget of one `sendToDevices` call, retries included (default 60 s). */
  sendDeadlineMs?: number;
  /** Users per broadcast batch (default `BATCH_USERS`). */
  batchUsers?: number;
  /** How long after the trigger sends that failed for a passing reason are retried before they are recorded (default one hour, `CAMPAIGN_RETRY_WINDOW_MS`). */
  retryWindowMs?: number;
  /** A rate-limited campaign's wait up to this is slept in the send loop; a longer one hands the batch's job back for it (default 2 s). */
  rateWaitInlineMs?: number;
}

const DEFAULT_RETRY_WINDOW_MS = 3_600_000;
/** Longest wait between two runs of a batch that retries passing failures. */
const MAX_RETRY_DELAY_MS = 10 * 60_000;

interface PreparedMessage {
  template: MessageTemplate;
  /** The message may read its recipient (`user.*`): rendered per recipient; otherwise once per batch. */
  readsUser: boolean;
}

interface Prepared extends PreparedMessage {
  conditions: CompiledConditions;
  message: ParsedMessage;
  /** Rule `campaign-experiments`: each variant's message by variant id. */
  variants: Map<string, PreparedMessage>;
}

/**
 * Sends one batch of a trigger. The batch's audience is read now (send-time evaluation against the
 * primary store, rule `condition-language`) within its planned range; devices that already have an
 * outcome for this trigger are skipped, so a retried or resumed batch never repeats a recorded send
 * (rule `delivery-guarantee`). Each send is recorded as it ends (group-committed,
 * `fanout/outcome-committer.ts`), and the batch is closed (its counters written) only after all of them
 * are. Once the batch's attempts are spent, its finaliser records the devices still without an
 * outcome as failed and closes the batch, so the trigger ends.
 */
export function createSendBatchHandler(deps: FanoutDeps): JobHandler<'campaign.send-batch'> {
  const cache = new LRUCache<string, Prepared>({ max: 64 });
  const prepare = (db: Db, trigger: TriggerRecord): Prepared => {
    let prepared = cache.get(trigger.id);
    if (!prepared) {
      const message = parseMessageTemplate(trigger.definition.message);
      prepared = {
        conditions: compileTriggerConditions(db, trigger.definition, trigger.snapshotAt),
        message,
        template: trigger.definition.message,
        readsUser: messageReadsUser(message),
        variants: new Map(
          (trigger.definition.experiment?.variants ?? []).map((v) => [
            v.variant_id,
            { template: v.message, readsUser: messageReadsUser(parseMessageTemplate(v.message)) },
          ]),
        ),
      };
      cache.set(trigger.id, prepared);
    }
    return prepared;
  };
  // A local-time trigger's waves, written once when it started: read once per trigger.
  const wavesCache = new LRUCache<string, Wave[]>({ max: 64 });
  const waveOf = async (db: Db, trigger: TriggerRecord, waveNo: number) => {
    let waves = wavesCache.get(trigger.id);
    if (!waves) wavesCache.set(trigger.id, (waves = await listWaves(db, trigger.id)));
    const filter: WaveFilter = {
      keep: waveMember(trigger.localSchedule!, trigger.createdAt, waves, waveNo),
      countsUnresolved: waves[0]?.waveNo === waveNo,
    };
    return { filter, at: waves.find((w) => w.waveNo === waveNo)?.at ?? trigger.snapshotAt };
  };
  const audienceOf = async (
    db: Db,
    trigger: TriggerRecord,
    batch: { after_user_id: string | null; upto_user_id: string | null; wave_no: number | null },
  ) => {
    const prepared = prepare(db, trigger);
    const wave =
      batch.wave_no !== null && trigger.localSchedule ? await waveOf(db, trigger, Number(batch.wave_no)) : undefined;
    return 'targets' in trigger.audience
      ? targetsSlice(db, trigger.projectId, trigger.audience.targets, prepared.conditions, wave?.filter)
      : broadcastSlice(
          db,
          trigger.projectId,
          { after: batch.after_user_id, upto: batch.upto_user_id },
          // A wave reaches the users and devices created up to its own instant.
          Math.max(trigger.snapshotAt, wave?.at ?? 0),
          prepared.conditions,
          wave?.filter,
        );
  };
  // Chunks under way in this process, over all its batches: no more sends than the HTTP/2 pool has
  // streams, so none wait in its queue. At shutdown only those streams are left to end (nothing queued).
  const chunkSlots = new Semaphore(Math.max(1, Math.floor(deps.push.pool.concurrency / (deps.sendChunk ?? 100))));
  const notices = deps.push.notices;
  // One committer for every batch this process runs, so their outcomes share commits (one group
  // of a few hundred rows instead of one per batch); a committer that gave up is replaced.
  let shared: { db: Db; committer: OutcomeCommitter } | undefined;
  const committerFor = (db: Db): OutcomeCommitter => {
    if (!shared || shared.db !== db || shared.committer.failed)
      shared = {
        db,
        committer: createOutcomeCommitter(db, {
          logger: deps.logger,
          emit: (trx, projectId, list) => notices.emit(trx, projectId, list),
        }),
      };
    return shared.committer;
  };
  const close = async (
    db: Db,
    trigger: TriggerRecord,
    batchNo: number,
    state: 'done' | 'failed' | 'canceled',
    counters: unknown,
  ) => {
    await db.transaction().execute(async (trx) => {
      await releaseUnusedSlots(trx, trigger.id, batchNo);
      if (await finishBatch(trx, trigger.id, batchNo, state, counters, deps.clock.now()))
        await endTrigger(notices, trx, trigger, (t) => completeTriggerIfDone(t, trigger.id, deps.clock.now()));
    });
    // Analytics only: a failure to fold leaves partial rows the reads still sum correctly.
    await foldDeliveryCounts(db, trigger.id).catch((error: unknown) =>
      deps.logger?.warn({ err: error, triggerId: trigger.id }, 'folding the delivery rollup failed'),
    );
    // Opens (and conversions) of the trigger's first sends arrive while later batches go out.
    await foldOutcomeCounts(db, trigger.id).catch((error: unknown) =>
      deps.logger?.warn({ err: error, triggerId: trigger.id }, 'folding the open and conversion rollups failed'),
    );
  };

  const handler = async (
    { triggerId, batchNo }: { triggerId: string; batchNo: number },
    helpers: JobHelpers,
  ): Promise<void> => {
    const { db } = helpers;
    const [trigger, batch] = await Promise.all([findTrigger(db, triggerId), findBatch(db, triggerId, batchNo)]);
    if (!trigger || !batch || batch.state !== 'queued') return;

    const campaign =
      trigger.state === 'canceled' ? undefined : await findCampaign(db, trigger.projectId, trigger.campaignId);
    if (!campaign || campaign.status !== 'active') {
      const reason = `campaign is ${campaign?.status ?? 'no longer active'}`;
      await endTrigger(notices, db, trigger, (d) => cancelTrigger(d, triggerId, reason, deps.clock.now()));
      // Counted from its ledger: an earlier run of the batch may have sent part of it before the cancel.
      await close(db, trigger, batchNo, 'canceled', await batchTotals(db, triggerId, batchNo, undefined));
      return;
    }
    const slice = await audienceOf(db, trigger, batch);
    const deviceIds = slice.recipients.flatMap((r) => r.devices.map((d) => d.deviceId));
    const done = await recordedDevices(db, triggerId, deviceIds);
    // Rule `campaign-experiments`: the control group is recorded (sent nothing) before any other gate,
    // so it is never held, capped or counted toward caps; everyone else keeps their variant.
    const split = splitRecipients(trigger, slice.recipients);
    if (split) {
      const now = deps.clock.now();
      await recordDeliveries(db, [
        ...skipRows(trigger, batchNo, split.control, done, now, CONTROL_SKIP_REASON, CONTROL),
        ...skipRows(trigger, batchNo, split.noWinner, done, now, NO_WINNER_SKIP_REASON, null),
      ]);
      await holdForWinner(db, deps.clock, trigger, split.waiting, slice.counters);
    }
    // Rule `quiet-hours`: a critical campaign (a login code, a security alert) is never held.
    const recipients = await holdQuietRecipients(db, deps.clock, {
      trigger,
      campaign,
      recipients: split ? split.rest : slice.recipients,
      done,
      counters: slice.counters,
      bypass: campaign.sendPolicy.critical,
    });
    const pacer = createPacer(db, deps.clock, campaign, {
      chunk: deps.sendChunk ?? 100,
      inlineWaitMs: deps.rateWaitInlineMs ?? 2000,
      signal: helpers.signal,
    });
    const ended = await sendBatch(
      deps,
      helpers,
      chunkSlots,
      committerFor(db),
      trigger,
      batchNo,
      prepare(db, trigger),
      recipients,
      done,
      pacer,
      split?.assignments,
    );
    await close(db, trigger, batchNo, ended, await batchTotals(db, triggerId, batchNo, slice.counters));
  };

  const finalise = async (
    { triggerId, batchNo }: { triggerId: string; batchNo: number },
    helpers: JobHelpers,
  ): Promise<void> => {
    const { db } = helpers;
    const [trigger, batch] = await Promise.all([findTrigger(db, triggerId), findBatch(db, triggerId, batchNo)]);
    if (!trigger || !batch || batch.state !== 'queued') return;
    let audience: TriggerCounters | undefined;
    try {
      const slice = await audienceOf(db, trigger, batch);
      const devices = slice.recipients.flatMap((r) =>
        r.devices.map((d) => ({ deviceId: d.deviceId, userId: r.user.id, device: d })),
      );
      const recorded = await recordedDevices(
        db,
        triggerId,
        devices.map((d) => d.deviceId),
      );
      const now = deps.clock.now();
      const unsent = devices.filter((d) => !recorded.has(d.deviceId));
      const rows = unsent.map((d) => ({
        trigger_id: triggerId,
        device_id: d.deviceId,
        batch_no: batchNo,
        user_id: d.userId,
        status: DeliveryStatus.FAILED,
        message_id: null,
        failure_reason: 'BATCH_ATTEMPTS_EXHAUSTED',
        token_action: null,
        detail: null,
        provider: d.device.provider,
        created_at: now,
        project_id: trigger.projectId,
        trigger_created_at: trigger.createdAt,
        variant: assignmentOf(trigger, d.userId) ?? null,
      }));
      await notices.recordWithNotices(
        db,
        trigger.projectId,
        ['delivery.failed'],
        (d) => recordDeliveries(d, rows),
        () => unsent.map((d) => unsentNotice(trigger, d.device, now)),
      );
      audience = slice.counters;
    } catch (error) {
      // The audience cannot be read (the reason the batch failed, perhaps): close with what was recorded.
      deps.logger?.warn(
        { err: error, triggerId, batchNo },
        "could not read a spent batch's audience; closing it with its recorded outcomes",
      );
    }
    deps.logger?.error({ triggerId, batchNo }, 'campaign batch spent its attempts; closed as failed');
    await close(db, trigger, batchNo, 'failed', await batchTotals(db, triggerId, batchNo, audience));
  };

  return Object.assign(handler, { finalise });
}

/**
 * A batch's counters: the audience stages from its slice, the sends from its ledger rows. `devices`
 * counts ledger rows, so a device pruned on an earlier attempt (gone from the slice now) still
 * counts, and `devices` = accepted + failed + render skips holds.
 */
async function batchTotals(
  db: Db,
  triggerId: string,
  batchNo: number,
  audience: TriggerCounters | undefined,
): Promise<TriggerCounters> {
  const totals = addCounters(emptyCounters(), audience);
  totals.devices = 0;
  return addDeliveryCounts(totals, await countDeliveries(db, triggerId, batchNo), true);
}

/** Ledger rows of devices not yet recorded, skipped for `reason` (rule `campaign-experiments`: the control, no winner). */
function skipRows(
  trigger: TriggerRecord,
  batchNo: number,
  recipients: Recipient[],
  done: Set<string>,
  now: number,
  reason: string,
  variant: string | null,
): TriggerDeliveriesTable[] {
  return recipients.flatMap(({ user, devices }) =>
    devices
      .filter((d) => !done.has(d.deviceId))
      .map((d) => ({
        trigger_id: trigger.id,
        device_id: d.deviceId,
        batch_no: batchNo,
        user_id: user.id,
        status: DeliveryStatus.SKIPPED,
        message_id: null,
        failure_reason: reason,
        token_action: null,
        detail: null,
        provider: d.provider,
        created_at: now,
        project_id: trigger.projectId,
        trigger_created_at: trigger.createdAt,
        variant,
      })),
  );
}

async function sendBatch(
  deps: FanoutDeps,
  helpers: JobHelpers,
  chunkSlots: Semaphore,
  committer: OutcomeCommitter,
  trigger: TriggerRecord,
  batchNo: number,
  prepared: Prepared,
  recipients: Recipient[],
  done: Set<string>,
  pacer: Pacer | undefined,
  assignments: Map<string, string> | undefined,
): Promise<'done' | 'canceled'> {
  const { db } = helpers;
  const now = deps.clock.now();
  // One object per row, its fields assigned once (no spread): one of these per device.
  const row = (
    d: { deviceId: string; userId: string; provider: string },
    status: string,
    messageId: string | null,
    failureReason: string | null,
    tokenAction: string | null,
    detail: string | null,
    variant: string | null,
  ): TriggerDeliveriesTable => ({
    trigger_id: trigger.id,
    device_id: d.deviceId,
    batch_no: batchNo,
    user_id: d.userId,
    status,
    message_id: messageId,
    failure_reason: failureReason,
    token_action: tokenAction,
    detail,
    provider: d.provider,
    created_at: now,
    project_id: trigger.projectId,
    trigger_created_at: trigger.createdAt,
    variant,
  });
  const sends: DeviceSend[] = [];
  const skipped: TriggerDeliveriesTable[] = [];
  const campaign = { campaign_id: trigger.campaignId, name: trigger.definition.campaignName };
  const { event, eventsByUser } = trigger.definition;
  const data = { herald_campaign_id: trigger.campaignId, herald_trigger_id: trigger.id };
  const refs = { triggerId: trigger.id, campaignId: trigger.campaignId };
  // The whole batch renders in one call to the worker pool; a recipient over a budget fails alone.
  // Rules `re-eligibility` and `frequency-caps`: who may still receive it takes a slot, the others are recorded skipped.
  const pendingRecipients = await gateRecipients(
    db,
    deps.clock,
    trigger,
    batchNo,
    recipients
      .map(({ user, devices }) => ({ user, pending: devices.filter((d) => !done.has(d.deviceId)) }))
      .filter((r) => r.pending.length > 0),
    ({ user, pending }, reason) =>
      pending.map((d) => row(d, DeliveryStatus.SKIPPED, null, reason, null, null, assignments?.get(user.id) ?? null)),
  );
  // A message that reads no `user.*` is the same for everyone: one render, with an empty `user` (so a
  // read the analysis missed fails under strict variables, and never shows one recipient's data to another).
  // Sends of an event-triggered campaign each have their user's own event, so they render one by one.
  // Rule `campaign-experiments`: recipients are grouped by variant, each group rendered with its message.
  const groups = new Map<string | undefined, number[]>();
  pendingRecipients.forEach(({ user }, i) => {
    const key = assignments?.get(user.id);
    const group = groups.get(key);
    if (group) group.push(i);
    else groups.set(key, [i]);
  });
  const scopeOf = (user: Recipient['user']) => {
    const own = eventsByUser ? eventsByUser[user.id] : event;
    return {
      trigger: trigger.properties,
      user: { ...user.properties, project_user_id: user.projectUserId },
      campaign,
      ...(own && { event: own }),
    };
  };
  await Promise.all(
    [...groups].map(async ([variant, members]) => {
      const chosen = (variant !== undefined && prepared.variants.get(variant)) || prepared;
      const once = !chosen.readsUser && !eventsByUser;
      // Rule `message-locales`: each recipient's fields in its language, chosen before rendering; a
      // message rendered once is rendered once per message locale of the group.
      const { outcomes: rendered } = await renderLocalized(
        deps.templates,
        chosen.template,
        members.map((i) => {
          const { user } = pendingRecipients[i]!;
          return {
            scope: once ? { trigger: trigger.properties, user: {}, campaign, ...(event && { event }) } : scopeOf(user),
            properties: user.properties,
          };
        }),
        { projectId: trigger.projectId, triggerId: trigger.id },
        once,
      );
      const variantId = variant ?? null;
      const sendData = variant === undefined ? data : { ...data, herald_variant: variant };
      const sendRefs = variant === undefined ? refs : { ...refs, variant };
      const shared = new Map<RenderOutcome, DeviceSend['message']>();
      members.forEach((i, k) => {
        const { pending } = pendingRecipients[i]!;
        const outcome = rendered[k]!;
        if (!outcome.ok) {
          for (const d of pending)
            skipped.push(row(d, DeliveryStatus.SKIPPED, null, outcome.reason, null, outcome.detail, variantId));
          return;
        }
        const { title, body, imageUrl, landingUrl } = outcome.message;
        // `data` and `refs` are the group's, shared by its sends (the senders copy `data`, nothing writes to
        // either); a message rendered once is one object per message locale of the group (the FCM sender
        // then reuses its body).
        let message = once ? shared.get(outcome) : undefined;
        if (!message) {
          message = { title, body, imageUrl, landingUrl, data: sendData };
          if (once) shared.set(outcome, message);
        }
        for (const device of pending) sends.push({ device, message, refs: sendRefs });
      });
    }),
  );
  await recordDeliveries(db, skipped);

  // A send that failed for a passing reason (retries exhausted, provider quota) is left out of the
  // ledger until the batch's last attempt, so the batch's next run tries it again.
  // From when the trigger fired (its snapshot): a scheduled one may have been created long before.
  const elapsed = deps.clock.now() - trigger.snapshotAt;
  const window = deps.retryWindowMs ?? DEFAULT_RETRY_WINDOW_MS;
  const lastAttempt = helpers.attempt >= helpers.maxAttempts || elapsed >= window;
  let postponed = 0;
  const notices = deps.push.notices;
  // Read once per run (cached per project): without a subscription no notice is even built.
  const wanted = await notices.wanted(db, trigger.projectId);
  const wantsDeliveries = DELIVERY_NOTICE_TYPES.some((type) => wanted.has(type));
  const onOutcome = (o: DeviceSendOutcome, send: DeviceSend) => {
    // A send cut short at shutdown has no known outcome: never final, the batch's next run sends it
    // again. Nor is a passing failure final in a run being handed back (uncounted) at shutdown.
    const retryLater =
      o.failureReason === SEND_ABORTED || (TRANSIENT.has(o.status) && (!lastAttempt || helpers.stopping.aborted));
    if (retryLater) postponed++;
    const ledger = retryLater
      ? null
      : row(
          send.device,
          o.status,
          o.messageId,
          o.failureReason ?? null,
          o.tokenAction ?? null,
          null,
          send.refs?.variant ?? null,
        );
    // Only a recorded outcome is final (a postponed one is sent again): its notice commits with it.
    const told = ledger && wantsDeliveries ? [deliveryNotice(trigger.projectId, send, o)] : undefined;
    committer.add({ delivery: deliveryRow(trigger.projectId, send, o), ledger, ...(told && { notices: told }) });
  };
  const chunk = deps.sendChunk ?? 100;
  // Shutdown (`stopping`) or a lost lease (`signal`): start nothing new; what is under way ends and is
  // recorded. At the shutdown deadline or a lost lease (`signal`) the sends under way are cut short too.
  let broken = false; // one loop failed (the database is out): the others start nothing new either
  let canceled = false; // the trigger was canceled: what went out stays recorded, nothing more is sent
  let paced: number | undefined; // rule `send-rate-limits`: the wait before the campaign may send again
  const stop = () => canceled || broken || paced !== undefined || helpers.signal.aborted || helpers.stopping.aborted;
  let next = 0;
  const worker = async () => {
    while (next < sends.length && !stop()) {
      const release = chunkSlots.tryAcquire() ?? (await chunkSlots.acquire());
      try {
        // The database lags or is out: send nothing more until the ledger takes what was sent. Asked
        // holding the slot, so a loop that waited for one while the database went out does not send.
        await committer.room(GROUP_ROWS);
        if (stop() || next >= sends.length) break;
        // Asked before every chunk, so no chunk starts after a cancel has committed (on any instance).
        if (await triggerCanceled(db, trigger.id)) {
          canceled = true;
          break;
        }
        const grant = pacer ? await pacer.take(Math.min(chunk, sends.length - next)) : { granted: chunk };
        if ('waitMs' in grant) {
          paced = grant.waitMs;
          break;
        }
        if (stop() || next >= sends.length) break;
        const part = sends.slice(next, (next += grant.granted));
        await sendToDevices(deps.push, db, trigger.projectId, part, {
          deadlineMs: deps.sendDeadlineMs ?? 60_000,
          onOutcome,
          recordDeliveries: false,
          signal: helpers.signal,
        });
      } finally {
        release();
      }
    }
  };
  const loops = await Promise.allSettled(
    Array.from({ length: Math.max(1, deps.chunksInFlight ?? 2) }, () =>
      worker().catch((error: unknown) => {
        broken = true;
        throw error;
      }),
    ),
  );
  // Every loop has ended, so every send that went out is queued: record them all before anything else.
  await committer.drain();
  const failed = loops.find((l): l is PromiseRejectedResult => l.status === 'rejected');
  if (failed) throw failed.reason;
  if (canceled) return 'canceled';
  if (paced !== undefined)
    throw new RetryJobError({
      delayMs: paced,
      reason: 'the campaign is at its max_sends_per_minute; the batch goes on then',
    });
  if (stop()) throw new Error('batch interrupted; unsent devices are sent when it runs again');
  // Retried for the whole window, not a number of attempts: waits grow with the time already spent
  // (so they double), never past the window's end, and provider quota holds are honoured by the sends.
  const delayMs = Math.max(0, Math.min(Math.max(1000, elapsed), MAX_RETRY_DELAY_MS, window - elapsed));
  if (postponed > 0)
    throw new RetryJobError({
      delayMs,
      reason: `${postponed} sends failed for a passing reason; the batch retries them`,
    });
  return 'done';
}

const TRANSIENT = new Set<string>([DeliveryStatus.FAILED, DeliveryStatus.RATE_LIMITED]);
