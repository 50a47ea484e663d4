import type { Db } from '../db/database.js';

// What push publishes when a send ends, and the interface it publishes through. webhooks/ implements
// it (queued, signed deliveries to a project's subscriptions) and src/herald.ts hands that to the push
// runtime, so push never imports webhooks/.

/**
 * The notices a project can subscribe to, and their payloads. Every message is
 * `{ "type", "timestamp", "data" }` (the Standard Webhooks payload shape); `data` never holds a
 * push address, a key or any other secret.
 */
export const NOTICE_TYPES = [
  'delivery.sent',
  'delivery.failed',
  'device.pruned',
  'trigger.completed',
  'preferences.updated',
  'message.opened',
  'conversion',
] as const;
export type NoticeType = (typeof NOTICE_TYPES)[number];

export const DELIVERY_NOTICE_TYPES: readonly NoticeType[] = ['delivery.sent', 'delivery.failed'];

/** One send to one device ended: `delivery.sent` when the provider accepted it, else `delivery.failed`. */
export interface DeliveryNoticeData {
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

/**
 * A user's preferences changed (rule `subscription-topics`): their whole new state, as
 * `GET /api/v1/users/{project_user_id}/preferences` answers it, and what changed them (`api` for
 * either key, `link` for the signed preference page or its API, `import` for a users import).
 */
export interface PreferencesUpdatedData {
  project_id: string;
  project_user_id: string;
  campaign_pushes: 'subscribed' | 'unsubscribed';
  topics: Record<string, 'subscribed' | 'unsubscribed'>;
  source: 'api' | 'link' | 'import';
}

/**
 * The recipient opened a message or tapped one of its actions (`POST /api/v1/messages/{message_id}:open`):
 * sent once per message, for the first open.
 */
export interface MessageOpenedData {
  project_id: string;
  message_id: string;
  /** Null when the message's device and campaign ledger row are gone. */
  project_user_id: string | null;
  /** The action id tapped; null for the notification itself. */
  action: string | null;
  opened_at: string;
  campaign_id?: string;
  trigger_id?: string;
}

/**
 * A user's event met a campaign's conversion goal (rule `conversion-goals`): sent once per goal per
 * send, when the conversion is stored with the event.
 */
export interface ConversionData {
  project_id: string;
  campaign_id: string;
  trigger_id: string;
  /** The goal's position in the campaign's `conversion_goals` (0: the primary one). */
  goal_index: number;
  goal_event: string;
  project_user_id: string;
  /** The send's message credited (the opened one when the goal counts from the open); null for the control group. */
  message_id: string | null;
  event_id: string;
  converted_at: string;
  revenue: number | null;
  /** The send's variant (rule `campaign-experiments`): its id, `control`, or null without an experiment. */
  variant: string | null;
}

/** An event as a feature reports it; `at` (epoch ms) is when the outcome happened. */
export type Notice =
  | { type: 'delivery.sent' | 'delivery.failed'; at: number; data: DeliveryNoticeData }
  | { type: 'device.pruned'; at: number; data: DevicePrunedData }
  | { type: 'trigger.completed'; at: number; data: TriggerCompletedData }
  | { type: 'preferences.updated'; at: number; data: PreferencesUpdatedData }
  | { type: 'message.opened'; at: number; data: MessageOpenedData }
  | { type: 'conversion'; at: number; data: ConversionData };

/**
 * How features report notices (push sends, token pruning, trigger ends). Notices are queued
 * in the caller's transaction, the one that commits the outcome they describe (outbox, rule `transactional-jobs`), so a
 * crash neither loses nor invents one. Implemented by `webhooks/notice-outbox.service.ts`.
 */
export interface NoticeOutbox {
  /** The notice types the project's enabled subscriptions want; empty when none (the hot path's check). */
  wanted(db: Db, projectId: string): Promise<ReadonlySet<NoticeType>>;
  /** Queues `events` for each enabled subscription that wants their type, through `db` (the caller's transaction). */
  emit(db: Db, projectId: string, events: Notice[]): Promise<void>;
  /**
   * Runs `write`; when the project wants one of `types`, runs it in a transaction (or the caller's)
   * with the events `eventsOf(result, trx)` describes, else alone, exactly as without webhooks.
   */
  recordWithNotices<T>(
    db: Db,
    projectId: string,
    types: readonly NoticeType[],
    write: (db: Db) => Promise<T>,
    eventsOf: (result: T, db: Db) => Notice[] | Promise<Notice[]>,
  ): Promise<T>;
  /** Forgets a project's cached subscriptions (after a change through this process; other processes wait out the TTL). */
  invalidate(projectId: string): void;
}

/** Publishes nowhere: a push runtime built without a publisher (tests of the runtime alone). */
export const NO_NOTICE_OUTBOX: NoticeOutbox = {
  wanted: async () => new Set(),
  emit: async () => {},
  recordWithNotices: async (db, _projectId, _types, write) => write(db),
  invalidate: () => {},
};
