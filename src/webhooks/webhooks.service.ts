import type { Db } from '../db/database.js';
import { AppError, invalid, notFound } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { randomBase62 } from '../lib/ids.js';
import {
  OutboundHostUnresolved,
  OutboundUrlRefused,
  resolveOutboundTarget,
  type OutboundPolicy,
} from '../lib/outbound-url-policy.js';
import { WEBHOOK_PROTOCOLS } from '../lib/webhook-sender.js';
import type { SecretBoxSource } from '../crypto/secret-box.js';
import type { DeliveryEvents } from '../push/delivery-event-publisher.js';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../push/delivery-event-publisher.js';
import { newSigningSecret } from './webhook-signer.js';
import * as repo from './webhooks.repository.js';

/** What webhook management needs; `events` is told about changes so this process's cache follows at once. */
export interface WebhookDeps {
  db: Db;
  clock: Clock;
  /** The one outbound-URL policy: destinations are checked here and again at every delivery. */
  outbound: OutboundPolicy;
  /** Seals signing secrets at rest (HERALD_SECRET_KEY, or DATA_DIR/secret.key on the embedded default). */
  secrets: SecretBoxSource;
  events?: Pick<DeliveryEvents, 'invalidate'> | undefined;
}

/** Subscriptions per project: enough for several environments and receivers, few enough to fan out cheaply. */
export const MAX_WEBHOOKS_PER_PROJECT = 20;
/** After a rotation the old secret keeps signing (a second signature) this long, so receivers can switch. */
export const PREVIOUS_SECRET_GRACE_MS = 24 * 60 * 60 * 1000;

export interface WebhookInput {
  url: string;
  events: string[];
  description?: string | null | undefined;
}

export interface WebhookPatch {
  url?: string | undefined;
  events?: string[] | undefined;
  description?: string | null | undefined;
  enabled?: boolean | undefined;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** The wire shape: never the secret. */
export function webhookToWire(w: repo.WebhookRecord) {
  return {
    webhook_id: w.id,
    url: w.url,
    events: w.events,
    description: w.description,
    enabled: w.enabled,
    disabled_reason: w.disabledReason,
    created_at: iso(w.createdAt),
    updated_at: iso(w.updatedAt),
  };
}

const aadOf = (projectId: string, id: string): string => `herald:webhook-secret:${projectId}:${id}`;

/** The secrets that sign now: the current one, and the previous one during its grace period. */
export function signingSecrets(deps: Pick<WebhookDeps, 'secrets'>, w: repo.WebhookRecord, now: number): string[] {
  const box = deps.secrets();
  const aad = aadOf(w.projectId, w.id);
  const current = box.open(w.secret, aad);
  if (w.previousSecret === null || w.previousSecretUntil === null || w.previousSecretUntil <= now) return [current];
  return [current, box.open(w.previousSecret, aad)];
}

function checkEvents(events: string[]): WebhookEventType[] {
  const unknown = events.filter((e) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e));
  if (unknown.length > 0)
    throw invalid(
      'INVALID_WEBHOOK_EVENTS',
      `Unknown event type ${JSON.stringify(unknown[0])}; use ${WEBHOOK_EVENT_TYPES.join(', ')}`,
    );
  if (events.length === 0) throw invalid('INVALID_WEBHOOK_EVENTS', 'events must name at least one event type');
  return [...new Set(events as WebhookEventType[])];
}

/** The outbound-URL policy, with DNS: a refused or unresolvable destination is a 400 naming the host and reason only. */
async function checkUrl(deps: WebhookDeps, url: string): Promise<string> {
  try {
    await resolveOutboundTarget(url, deps.outbound, WEBHOOK_PROTOCOLS);
  } catch (error) {
    if (error instanceof OutboundUrlRefused || error instanceof OutboundHostUnresolved)
      throw invalid('WEBHOOK_URL_REFUSED', `Webhook url refused: ${error.message}`);
    throw error;
  }
  return url;
}

async function requireWebhook(deps: WebhookDeps, projectId: string, id: string): Promise<repo.WebhookRecord> {
  const webhook = await repo.findWebhook(deps.db, projectId, id);
  if (!webhook) throw notFound('WEBHOOK_NOT_FOUND', `Webhook ${id} does not exist`);
  return webhook;
}

/** Creates a subscription and returns it with its signing secret, which is shown only here. */
export async function createWebhook(deps: WebhookDeps, projectId: string, input: WebhookInput) {
  const events = checkEvents(input.events);
  const url = await checkUrl(deps, input.url);
  const id = `wh_${randomBase62(24)}`;
  const secret = newSigningSecret();
  const now = deps.clock.now();
  const record: repo.WebhookRecord = {
    id,
    projectId,
    url,
    events,
    description: input.description ?? null,
    secret: deps.secrets().seal(secret, aadOf(projectId, id)),
    previousSecret: null,
    previousSecretUntil: null,
    enabled: true,
    disabledReason: null,
    failingSince: null,
    createdAt: now,
    updatedAt: now,
  };
  if (!(await repo.insertWebhookWithin(deps.db, record, MAX_WEBHOOKS_PER_PROJECT)))
    throw new AppError(
      'conflict',
      'WEBHOOK_LIMIT_REACHED',
      `A project may have at most ${MAX_WEBHOOKS_PER_PROJECT} webhooks; delete one first`,
    );
  deps.events?.invalidate(projectId);
  return { ...webhookToWire(record), secret };
}

export async function listWebhooks(deps: WebhookDeps, projectId: string) {
  return { webhooks: (await repo.listWebhooks(deps.db, projectId)).map(webhookToWire) };
}

export async function getWebhook(deps: WebhookDeps, projectId: string, id: string) {
  return webhookToWire(await requireWebhook(deps, projectId, id));
}

/** Changes only the fields given; `enabled: true` also re-enables a subscription disabled after failing deliveries. */
export async function updateWebhook(deps: WebhookDeps, projectId: string, id: string, patch: WebhookPatch) {
  const changes: repo.WebhookChanges = {
    ...(patch.events !== undefined && { events: checkEvents(patch.events) }),
    ...(patch.url !== undefined && { url: await checkUrl(deps, patch.url) }),
    ...(patch.description !== undefined && { description: patch.description }),
    ...(patch.enabled !== undefined && { enabled: patch.enabled }),
  };
  if (!(await repo.updateWebhook(deps.db, projectId, id, changes, deps.clock.now())))
    throw notFound('WEBHOOK_NOT_FOUND', `Webhook ${id} does not exist`);
  deps.events?.invalidate(projectId);
  return getWebhook(deps, projectId, id);
}

/** Idempotent, like the other deletes: an unknown id is not an error. Queued events for it are dropped. */
export async function deleteWebhook(deps: WebhookDeps, projectId: string, id: string): Promise<void> {
  await repo.deleteWebhook(deps.db, projectId, id);
  deps.events?.invalidate(projectId);
}

/** A new signing secret, shown once; the old one keeps signing beside it for `PREVIOUS_SECRET_GRACE_MS`. */
export async function rotateWebhookSecret(deps: WebhookDeps, projectId: string, id: string) {
  const webhook = await requireWebhook(deps, projectId, id);
  const secret = newSigningSecret();
  const until = deps.clock.now() + PREVIOUS_SECRET_GRACE_MS;
  await repo.updateWebhook(
    deps.db,
    projectId,
    id,
    {
      secret: deps.secrets().seal(secret, aadOf(projectId, id)),
      previousSecret: webhook.secret,
      previousSecretUntil: until,
    },
    deps.clock.now(),
  );
  return { webhook_id: id, secret, previous_secret_expires_at: iso(until) };
}
