import { randomBase62 } from '../lib/ids.js';

/**
 * The notices a project's webhooks can subscribe to (the wire's event types), and their payloads. Every message is
 * `{ "type", "timestamp", "data" }` (the Standard Webhooks payload shape); `data` never holds a
 * push address, a key or any other secret.
 */
export const NOTICE_TYPES = ['delivery.sent', 'delivery.failed', 'device.pruned', 'trigger.completed'] as const;
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

/** A notice as a feature reports it; `at` (epoch ms) is when the outcome happened. */
export type Notice =
  | { type: 'delivery.sent' | 'delivery.failed'; at: number; data: DeliveryNoticeData }
  | { type: 'device.pruned'; at: number; data: DevicePrunedData }
  | { type: 'trigger.completed'; at: number; data: TriggerCompletedData };

/** A notice as queued: its id (`webhook-id`, the same on every retry and subscription) and its exact body. */
export interface StoredNotice {
  id: string;
  type: NoticeType;
  createdAt: number;
  body: string;
}

/** Renders the body once, when the outcome commits: a retry a day later sends the same bytes. */
export function storedNotice(notice: Notice): StoredNotice {
  return {
    id: `evt_${randomBase62(24)}`,
    type: notice.type,
    createdAt: notice.at,
    body: JSON.stringify({ type: notice.type, timestamp: new Date(notice.at).toISOString(), data: notice.data }),
  };
}
