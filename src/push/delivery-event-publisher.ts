import type { Db } from '../db/database.js';

// What push publishes when a send ends, and the interface it publishes through. webhooks/ implements
// it (queued, signed deliveries to a project's subscriptions) and src/herald.ts hands that to the push
// runtime, so push never imports webhooks/.

/**
 * The delivery events a project can subscribe to, and their payloads. Every message is
 * `{ "type", "timestamp", "data" }` (the Standard Webhooks payload shape); `data` never holds a
 * push address, a key or any other secret.
 */
export const WEBHOOK_EVENT_TYPES = ['delivery.sent', 'delivery.failed', 'device.pruned', 'trigger.completed'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export const DELIVERY_EVENT_TYPES: readonly WebhookEventType[] = ['delivery.sent', 'delivery.failed'];

/** One send to one device ended: `delivery.sent` when the provider accepted it, else `delivery.failed`. */
export interface DeliveryEventData {
  project_id: string;
  /** Herald's id of the send; null only for a campaign device whose batch spent its attempts before sending. */
  message_id: string | null;
  project_user_id: string;
  device_id: string;
  provider: string;
  /** Delivery status (rule `delivery-status`) (`DELIVERY_RESULT_STATUS_...`). */
  status: string;
  failure_reason: string | null;
  provider_message_id: string | null;
  campaign_id?: string;
  trigger_id?: string;
}

/** Token hygiene removed a device (the provider said its address is gone) or disabled it (malformed address). */
export interface DevicePrunedData {
  project_id: string;
  device_id: string;
  project_user_id: string;
  provider: string;
  action: 'removed' | 'disabled';
  /** The provider's code (`UNREGISTERED`, `BadDeviceToken`, `HTTP_410`, ...). */
  reason: string;
  /** The send that found it out. */
  message_id: string;
  campaign_id?: string;
  trigger_id?: string;
}

/** A trigger reached a terminal state (`completed`, `failed` or `canceled`), with its final counters (rule `trigger-status`). */
export interface TriggerCompletedData {
  project_id: string;
  trigger_id: string;
  campaign_id: string;
  state: 'completed' | 'failed' | 'canceled';
  error?: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  counters: object;
}

/** An event as a feature reports it; `at` (epoch ms) is when the outcome happened. */
export type WebhookEvent =
  | { type: 'delivery.sent' | 'delivery.failed'; at: number; data: DeliveryEventData }
  | { type: 'device.pruned'; at: number; data: DevicePrunedData }
  | { type: 'trigger.completed'; at: number; data: TriggerCompletedData };

/**
 * How features report delivery events (push sends, token pruning, trigger ends). Events are queued
 * in the caller's transaction, the one that commits the outcome they describe (outbox, rule `transactional-jobs`), so a
 * crash neither loses nor invents one. Implemented by `webhooks/delivery-events.service.ts`.
 */
export interface DeliveryEvents {
  /** The event types the project's enabled subscriptions want; empty when none (the hot path's check). */
  wanted(db: Db, projectId: string): Promise<ReadonlySet<WebhookEventType>>;
  /** Queues `events` for each enabled subscription that wants their type, through `db` (the caller's transaction). */
  emit(db: Db, projectId: string, events: WebhookEvent[]): Promise<void>;
  /**
   * Runs `write`; when the project wants one of `types`, runs it in a transaction (or the caller's)
   * with the events `eventsOf(result, trx)` describes, else alone, exactly as without webhooks.
   */
  recordWithEvents<T>(
    db: Db,
    projectId: string,
    types: readonly WebhookEventType[],
    write: (db: Db) => Promise<T>,
    eventsOf: (result: T, db: Db) => WebhookEvent[] | Promise<WebhookEvent[]>,
  ): Promise<T>;
  /** Forgets a project's cached subscriptions (after a change through this process; other processes wait out the TTL). */
  invalidate(projectId: string): void;
}

/** Publishes nowhere: a push runtime built without a publisher (tests of the runtime alone). */
export const NO_DELIVERY_EVENTS: DeliveryEvents = {
  wanted: async () => new Set(),
  emit: async () => {},
  recordWithEvents: async (db, _projectId, _types, write) => write(db),
  invalidate: () => {},
};
