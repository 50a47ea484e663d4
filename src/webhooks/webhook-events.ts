import { randomBase62 } from '../lib/ids.js';
import type { WebhookEvent, WebhookEventType } from '../push/delivery-event-publisher.js';

/** An event as queued: its id (`webhook-id`, the same on every retry and subscription) and its exact body. */
export interface StoredEvent {
  id: string;
  type: WebhookEventType;
  createdAt: number;
  body: string;
}

/** Renders the body once, when the outcome commits: a retry a day later sends the same bytes. */
export function storedEvent(event: WebhookEvent): StoredEvent {
  return {
    id: `evt_${randomBase62(24)}`,
    type: event.type,
    createdAt: event.at,
    body: JSON.stringify({ type: event.type, timestamp: new Date(event.at).toISOString(), data: event.data }),
  };
}
