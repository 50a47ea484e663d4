import type { Db } from '../db/database.js';
import { disableDevice, removePushAddress, type Device } from '../devices/devices.service.js';
import { AppError } from '../errors.js';
import { newMessageId } from './message-id.js';
import type { BucketSpec } from '../rate-limit/token-buckets.js';
import { recordCredentialProblem, type ProjectCredentials } from './credentials/credentials.service.js';
import { insertDeliveries, storedMessageIds, type DeliveriesTable } from './deliveries.repository.js';
import { DeliveryStatus, type AttemptResult, type DeviceSend, type DeviceSendOutcome } from './push.types.js';
import type { PushRuntime } from './push-runtime.js';
import { retryDelayMs, sleep } from './retry-policy.js';
import { ABORTED } from './transport-error.js';
import { DELIVERY_EVENT_TYPES } from './delivery-event-publisher.js';
import { deliveryEvent, prunedEvent } from './delivery-events.js';

/**
 * A deadline as epoch ms. `undefined`: the request budget (REQUEST_TIMEOUT_MS less a margin). A value
 * below 10^12 is read as a duration from now, so `{ deadlineMs: 30_000 }` also does what it says.
 */
export function resolveDeadline(push: PushRuntime, deadlineMs: number | undefined): number {
  const now = push.clock.now();
  if (deadlineMs === undefined)
    return now + push.config.requestTimeoutMs - Math.min(5000, push.config.requestTimeoutMs / 10);
  return deadlineMs < 1e12 ? now + deadlineMs : deadlineMs;
}

/**
 * Sends rendered messages to devices: provider quota, retries with backoff inside the deadline,
 * token hygiene (unregistered addresses removed, invalid ones disabled) and one delivery record per
 * send. Outcomes come back in the order of `sends`; nothing throws for a single failed send.
 */
export interface SendToDevicesOptions {
  deadlineMs?: number;
  /** Called as each send ends, before the others (the campaign fan-out records each send as it is accepted). */
  onOutcome?: (outcome: DeviceSendOutcome, send: DeviceSend) => void;
  /** `false`: the caller stores the delivery records itself (with `deliveryRow`), in its own commits. */
  recordDeliveries?: boolean;
  /**
   * Cuts the sends short (a worker's shutdown deadline): waits end, requests at the provider are
   * cancelled, no retry starts. A send cut short ends `FAILED` with reason `SEND_ABORTED` unless
   * an earlier attempt's answer is known.
   */
  signal?: AbortSignal;
}

/**
 * The reason of a send cut short by its caller's signal. Its outcome is unknown: a request that
 * had reached the provider may have been delivered. A campaign sends it again on its next run.
 */
export const SEND_ABORTED = 'SEND_ABORTED';

export async function sendToDevices(
  push: PushRuntime,
  db: Db,
  projectId: string,
  sends: DeviceSend[],
  options: SendToDevicesOptions = {},
): Promise<DeviceSendOutcome[]> {
  if (sends.length === 0) return [];
  const deadline = resolveDeadline(push, options.deadlineMs);
  let credentials: ProjectCredentials | AttemptResult;
  try {
    credentials = await push.credentials(db, projectId);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    push.logger?.error({ err: error, projectId }, 'push credentials unusable');
    credentials = { status: DeliveryStatus.PROVIDER_AUTH_ERROR, reason: error.code };
  }
  const quotas = 'status' in credentials ? {} : quotasFor(push, credentials);
  const onOutcome = options.onOutcome;
  const outcomes = await Promise.all(
    sends.map((send) => {
      const sent = sendOne(
        push,
        db,
        projectId,
        credentials,
        quotas[send.device.provider],
        send,
        deadline,
        options.signal,
      );
      return onOutcome ? sent.then((outcome) => (onOutcome(outcome, send), outcome)) : sent;
    }),
  );
  if (options.recordDeliveries !== false)
    await push.events.recordWithEvents(
      db,
      projectId,
      DELIVERY_EVENT_TYPES,
      (d) =>
        insertDeliveries(
          d,
          outcomes.map((outcome, i) => deliveryRow(projectId, sends[i]!, outcome)),
        ),
      () => outcomes.map((outcome, i) => deliveryEvent(projectId, sends[i]!, outcome)),
    );
  push.observer?.sendsFinished(outcomes);
  await noteCredentialProblems(push, db, projectId, outcomes);
  return outcomes;
}

export type { DeliveriesTable } from './deliveries.repository.js';

/**
 * Stores delivery records made by `deliveryRow` (a campaign records its sends in its own
 * transactions) and returns the message ids it inserted. `mayExist`: a retried commit whose first
 * try may have landed unseen, so records already stored are skipped.
 */
export async function storeDeliveries(db: Db, rows: DeliveriesTable[], mayExist = false): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const stored = mayExist
    ? await storedMessageIds(
        db,
        rows.map((r) => r.message_id),
      )
    : new Set<string>();
  const fresh = rows.filter((r) => !stored.has(r.message_id));
  await insertDeliveries(db, fresh);
  return new Set(fresh.map((r) => r.message_id));
}

export function deliveryRow(projectId: string, send: DeviceSend, outcome: DeviceSendOutcome): DeliveriesTable {
  const userTarget = send.refs?.projectUserId;
  return {
    message_id: outcome.messageId,
    project_id: projectId,
    target_type: userTarget === undefined ? 'device' : 'user',
    target_id: userTarget ?? send.device.deviceId,
    device_id: send.device.deviceId,
    provider: send.device.provider,
    status: outcome.status,
    failure_reason: outcome.failureReason ?? null,
    provider_message_id: outcome.providerMessageId ?? null,
    trigger_id: send.refs?.triggerId ?? null,
    attempts: outcome.attempts,
    created_at: outcome.createdAt,
    completed_at: outcome.completedAt,
  };
}

type Quota = { key: string; spec: BucketSpec } | undefined;

/** The bucket each provider's sends draw from: per FCM project and per APNs topic (Web Push has none). */
function quotasFor(push: PushRuntime, credentials: ProjectCredentials): Partial<Record<Device['provider'], Quota>> {
  return {
    fcm: credentials.fcm && { key: `push:fcm:${credentials.fcm.projectId}`, spec: push.quotas.fcm },
    apns: credentials.apns && { key: `push:apns:${credentials.apns.topic}`, spec: push.quotas.apns },
  };
}

function attempt(
  push: PushRuntime,
  credentials: ProjectCredentials,
  send: DeviceSend,
  messageId: string,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<AttemptResult> {
  const { device, message } = send;
  if (device.provider === 'fcm' && credentials.fcm)
    return push.senders.fcm.send(credentials.fcm, device, message, messageId, timeoutMs, signal);
  if (device.provider === 'apns' && credentials.apns)
    return push.senders.apns.send(credentials.apns, device, message, messageId, timeoutMs, signal);
  if (device.provider === 'webpush' && credentials.webpush)
    return push.senders.webpush.send(credentials.webpush, device, message, messageId, timeoutMs, signal);
  return Promise.resolve({ status: DeliveryStatus.PROVIDER_AUTH_ERROR, reason: 'CREDENTIALS_NOT_CONFIGURED' });
}

async function sendOne(
  push: PushRuntime,
  db: Db,
  projectId: string,
  credentials: ProjectCredentials | AttemptResult,
  quota: Quota,
  send: DeviceSend,
  deadline: number,
  signal: AbortSignal | undefined,
): Promise<DeviceSendOutcome> {
  const createdAt = push.clock.now();
  const messageId = newMessageId(createdAt);
  const { device } = send;
  const finish = (result: AttemptResult, attempts: number, tokenAction?: 'removed' | 'disabled'): DeviceSendOutcome => {
    // Assigned field by field (no spreads): one of these per send.
    const outcome: DeviceSendOutcome = {
      deviceId: device.deviceId,
      provider: device.provider,
      status: result.status,
      messageId,
      attempts,
      createdAt,
      completedAt: push.clock.now(),
    };
    if (result.providerMessageId) outcome.providerMessageId = result.providerMessageId;
    if (result.reason) outcome.failureReason = result.reason;
    if (tokenAction) outcome.tokenAction = tokenAction;
    if (result.credentialProblem) outcome.credentialProblem = result.credentialProblem;
    return outcome;
  };
  if (device.status !== 'active') return finish({ status: DeliveryStatus.SKIPPED, reason: 'DEVICE_DISABLED' }, 0);
  if ('status' in credentials) return finish(credentials, 0);

  const sendBy = deadline - push.retry.deadlineMarginMs;
  const deviceKey = `${projectId}:${device.deviceId}`;
  let result: AttemptResult | undefined;
  let attempts = 0;
  let authRefreshed = false;
  // Cut short by the caller: an attempt under way was cancelled (its answer unknown), or none had started.
  const aborted = (): boolean => {
    if (!signal?.aborted) return false;
    if (!result || result.reason === ABORTED) result = { status: DeliveryStatus.FAILED, reason: SEND_ABORTED };
    return true;
  };
  for (;;) {
    if (aborted()) break;
    const waitLimit = Math.min(sendBy, push.clock.now() + push.retry.maxRateLimitWaitMs);
    const deviceHeld = push.quota.deviceHeldUntil(deviceKey);
    if (deviceHeld > push.clock.now()) {
      if (deviceHeld >= waitLimit) {
        result ??= { status: DeliveryStatus.RATE_LIMITED, reason: 'DEVICE_QUOTA_BACKOFF' };
        break;
      }
      await sleep(deviceHeld - push.clock.now(), signal);
      if (aborted()) break;
    }
    if (
      quota &&
      !push.quota.tryAcquire(quota.key) &&
      !(await push.quota.acquire(quota.key, quota.spec, sendBy, waitLimit))
    ) {
      result ??= {
        status: DeliveryStatus.RATE_LIMITED,
        reason: push.quota.heldUntil(quota.key) > push.clock.now() ? 'PROVIDER_QUOTA_BACKOFF' : 'QUOTA_WAIT_TIMEOUT',
      };
      break;
    }
    if (aborted()) break;
    const remaining = sendBy - push.clock.now();
    if (remaining <= 0) {
      result ??= { status: DeliveryStatus.FAILED, reason: 'DEADLINE_EXCEEDED' };
      break;
    }
    attempts++;
    result = await attempt(push, credentials, send, messageId, Math.min(push.config.pushTimeoutMs, remaining), signal);
    if (quota && result.status === DeliveryStatus.ACCEPTED) push.quota.succeeded(quota.key);
    if (aborted()) break;
    if (result.refreshAuth && !authRefreshed) {
      authRefreshed = true;
      continue;
    }
    if (!result.retryable || attempts >= push.retry.maxAttempts) break;
    const now = push.clock.now();
    let delay = retryDelayMs(push.retry, attempts, result);
    if (result.status === DeliveryStatus.RATE_LIMITED) {
      // A device's own rate holds that device only; a project quota paces every send of the project.
      if (result.quotaScope === 'device') push.quota.holdDevice(deviceKey, now + delay);
      else if (quota && result.quotaScope === 'project')
        delay = Math.max(delay, push.quota.backOff(quota.key, result.retryAfterMs, result.minDelayMs ?? 0) - now);
      else if (quota) push.quota.hold(quota.key, now + Math.max(result.retryAfterMs ?? 0, result.minDelayMs ?? 0));
    }
    if (now + delay >= sendBy) break;
    if (result.status === DeliveryStatus.RATE_LIMITED && delay > push.retry.maxRateLimitWaitMs) break;
    await sleep(delay, signal);
  }
  // Set by every way out of the loop (`aborted()` included).
  const ended: AttemptResult = result ?? { status: DeliveryStatus.FAILED, reason: SEND_ABORTED };
  return finish(
    ended,
    attempts,
    ended.tokenAction ? await applyTokenAction(push, db, projectId, send, messageId, ended) : undefined,
  );
}

/** Configuration errors are the project's, not the devices': recorded once per provider and call on the credentials. */
async function noteCredentialProblems(
  push: PushRuntime,
  db: Db,
  projectId: string,
  outcomes: DeviceSendOutcome[],
): Promise<void> {
  const problems = new Map<Device['provider'], { reason: string; count: number }>();
  for (const o of outcomes) {
    if (!o.credentialProblem) continue;
    const seen = problems.get(o.provider);
    problems.set(o.provider, { reason: seen?.reason ?? o.credentialProblem, count: (seen?.count ?? 0) + 1 });
  }
  for (const [provider, { reason, count }] of problems) {
    push.noteCredentialProblem(provider, reason, count);
    try {
      await recordCredentialProblem(db, projectId, provider, reason, count, push.clock.now());
    } catch (error) {
      push.logger?.error({ err: error, projectId, provider }, 'recording a credentials problem failed');
    }
  }
}

/**
 * Token hygiene (rule `token-hygiene`): an unregistered address is deleted at once, an invalid one disabled; with a
 * `device.pruned` webhook subscribed, its event commits with the change (only when a row changed).
 */
async function applyTokenAction(
  push: PushRuntime,
  db: Db,
  projectId: string,
  send: DeviceSend,
  messageId: string,
  result: AttemptResult,
): Promise<'removed' | 'disabled' | undefined> {
  const { device } = send;
  const reason = result.reason ?? result.status;
  const pruned = (action: 'removed' | 'disabled') => (changed: boolean) =>
    changed ? [prunedEvent(projectId, send, messageId, action, reason, push.clock.now())] : [];
  try {
    if (result.tokenAction === 'remove') {
      // Apple's advice: a token registered again after it was reported invalid is valid again.
      if (result.unregisteredAt !== undefined && device.updatedAt > result.unregisteredAt) return undefined;
      await push.events.recordWithEvents(
        db,
        projectId,
        ['device.pruned'],
        async (d) => (await removePushAddress(d, projectId, device.provider, device.pushAddress)) > 0,
        pruned('removed'),
      );
      return 'removed';
    }
    if (result.tokenAction === 'disable') {
      await push.events.recordWithEvents(
        db,
        projectId,
        ['device.pruned'],
        (d) => disableDevice(d, push.clock, projectId, device.deviceId, reason),
        pruned('disabled'),
      );
      return 'disabled';
    }
  } catch (error) {
    push.logger?.error({ err: error, projectId, deviceId: device.deviceId }, 'token hygiene failed');
  }
  return undefined;
}
