import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import type { JobHandler, JobHelpers } from '../jobs/job-types.js';
import { AbandonJobError, RetryJobError, retryDelayMs } from '../jobs/jobs.js';
import type { Clock } from '../lib/clock.js';
import {
  OutboundHostUnresolved,
  OutboundUrlRefused,
  resolveOutboundTarget,
  type OutboundPolicy,
  type OutboundTarget,
} from '../lib/outbound-url-policy.js';
import { redactUrl } from '../lib/redact.js';
import { postWebhook, webhookAgent, WEBHOOK_PROTOCOLS, WEBHOOK_RETRY_WINDOW_MS } from '../lib/webhook-sender.js';
import type { SecretBoxSource } from '../crypto/secret-box.js';
import type { DeliveryEvents } from '../push/delivery-event-publisher.js';
import type { StoredEvent } from './webhook-events.js';
import { standardWebhookHeaders } from './webhook-signer.js';
import * as repo from './webhooks.repository.js';
import { signingSecrets } from './webhooks.service.js';

export interface WebhookDeliveryDeps {
  clock: Clock;
  outbound: OutboundPolicy;
  secrets: SecretBoxSource;
  /** This process's subscription cache, told when a failing subscription is disabled. */
  events?: Pick<DeliveryEvents, 'invalidate'> | undefined;
  /** Per request (default 10 s, as rule `a2a-webhooks` has for A2A). */
  timeoutMs?: number;
  /** Requests under way at once per job (default 4), over keep-alive connections. */
  concurrency?: number;
}

/** A subscription whose every delivery has failed for this long is disabled (`DELIVERY_FAILING`), as Svix does. */
export const DISABLE_AFTER_FAILING_MS = 5 * 24 * 60 * 60 * 1000;

type Attempt = { event: StoredEvent; ok: boolean; unreachable?: boolean };

/**
 * Delivers a job's events to one subscription, each as its own signed POST (Standard Webhooks).
 * The destination is checked against the outbound-URL policy once per run and every request goes
 * to that checked address (no DNS rebinding), without following redirects. Events answered 2xx
 * are done; the rest are retried with the queue's backoff as a counted attempt of the same job,
 * carrying only them, until 24 h after they happened; then the job is abandoned (dead, holding
 * the events it could not deliver). A deleted or disabled subscription, or an event type it no
 * longer wants, drops the events; a destination the policy now refuses abandons them at once.
 */
export function createWebhookDeliveryHandler(deps: WebhookDeliveryDeps): JobHandler<'webhooks.deliver'> {
  return async (payload, helpers) => {
    const { db, logger } = helpers;
    const log = logger.child({ webhook_id: payload.webhookId });
    const webhook = await repo.findWebhook(db, payload.projectId, payload.webhookId);
    if (!webhook?.enabled) {
      log.info({ events: payload.events.length }, 'webhook deleted or disabled; its queued events are dropped');
      return;
    }
    const events = payload.events.filter((e) => webhook.events.includes(e.type));
    if (events.length === 0) return;
    const deadline = Math.min(...events.map((e) => e.createdAt)) + WEBHOOK_RETRY_WINDOW_MS;
    const left = (rest: StoredEvent[]) => ({ ...payload, events: rest });

    let attempts: Attempt[] = []; // none when the host does not resolve: retried like a receiver that is down
    try {
      const target = await resolveOutboundTarget(webhook.url, deps.outbound, WEBHOOK_PROTOCOLS);
      attempts = await deliverAll(deps, helpers, target, signingSecrets(deps, webhook, deps.clock.now()), events);
    } catch (error) {
      if (error instanceof OutboundUrlRefused) {
        log.warn(
          { url: redactUrl(webhook.url), reason: error.reason },
          'webhook destination refused; events abandoned',
        );
        throw new AbandonJobError(`destination refused: ${error.reason}`, { payload: left(events) });
      }
      if (!(error instanceof OutboundHostUnresolved)) throw error;
    }
    const done = new Set(attempts.filter((a) => a.ok).map((a) => a.event));
    const failed = events.filter((e) => !done.has(e)); // answered otherwise, or not tried
    if (done.size > 0) await repo.noteDeliverySuccess(db, webhook.id);
    if (failed.length === 0) return;

    const interrupted = helpers.stopping.aborted || helpers.signal.aborted;
    if (interrupted && attempts.every((a) => a.ok)) throw new RetryJobError({ payload: left(failed) });
    if (done.size === 0 && (await disableIfFailingTooLong(deps, db, webhook, log))) return;
    const now = deps.clock.now();
    const reason = `${failed.length} of ${events.length} events not delivered to ${redactUrl(webhook.url)}`;
    if (now >= deadline) {
      log.error({ events: failed.map((e) => e.id) }, 'webhook events not delivered within 24 h; they are dead');
      throw new AbandonJobError(reason, { payload: left(failed) });
    }
    // The queue's backoff, cut short so the last attempt falls on the 24 h mark.
    const delayMs = Math.min(retryDelayMs(helpers.attempt), deadline - now);
    throw new RetryJobError({ countAsAttempt: true, payload: left(failed), delayMs, reason });
  };
}

/**
 * Sends each event as its own message, a few at a time over keep-alive connections to the checked
 * address. A network error or timeout means the receiver is unreachable: no new request starts.
 */
async function deliverAll(
  deps: WebhookDeliveryDeps,
  helpers: JobHelpers,
  target: OutboundTarget,
  secrets: string[],
  events: StoredEvent[],
): Promise<Attempt[]> {
  const concurrency = Math.max(1, deps.concurrency ?? 4);
  const agent = webhookAgent(target, concurrency);
  const attempts: Attempt[] = [];
  let next = 0;
  const stop = () => helpers.stopping.aborted || helpers.signal.aborted || attempts.some((a) => a.unreachable === true);
  const worker = async () => {
    while (next < events.length && !stop()) {
      const event = events[next++]!;
      const headers = {
        'content-type': 'application/json',
        'user-agent': 'Herald-Webhooks',
        ...standardWebhookHeaders(secrets, event.id, deps.clock.now(), event.body),
      };
      try {
        const status = await postWebhook({
          target,
          headers,
          body: event.body,
          agent,
          signal: helpers.signal,
          ...(deps.timeoutMs ? { timeoutMs: deps.timeoutMs } : {}),
        });
        attempts.push({ event, ok: status >= 200 && status <= 299 });
      } catch {
        attempts.push({ event, ok: false, unreachable: true });
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, events.length) }, worker));
  } finally {
    agent.destroy();
  }
  return attempts;
}

async function disableIfFailingTooLong(
  deps: WebhookDeliveryDeps,
  db: Db,
  webhook: repo.WebhookRecord,
  log: Logger,
): Promise<boolean> {
  const now = deps.clock.now();
  if (!(await repo.noteDeliveryFailure(db, webhook.id, now, now - DISABLE_AFTER_FAILING_MS))) return false;
  deps.events?.invalidate(webhook.projectId);
  log.warn({ url: redactUrl(webhook.url) }, 'every delivery to this webhook has failed for 5 days; it is disabled');
  return true;
}
