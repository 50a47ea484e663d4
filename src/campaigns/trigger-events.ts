import type { Db } from '../db/database.js';
import type { Device } from '../devices/devices.service.js';
import { DeliveryStatus } from '../push/push.types.js';
import type { DeliveryEvents, WebhookEvent } from '../push/delivery-event-publisher.js';
import { getTriggerStatus } from './trigger-status.service.js';

export interface EndingTrigger {
  id: string;
  projectId: string;
  campaignId: string;
}

/**
 * Ends a trigger through `transition` (a guarded state change that returns whether it happened).
 * With a `trigger.completed` webhook subscribed, the event (final state and counters, rule `trigger-status`) commits
 * in the same transaction, so exactly one is sent per trigger whichever worker ends it.
 */
export function endTrigger(
  events: DeliveryEvents,
  db: Db,
  trigger: EndingTrigger,
  transition: (db: Db) => Promise<boolean>,
): Promise<boolean> {
  return events.recordWithEvents(db, trigger.projectId, ['trigger.completed'], transition, async (ended, trx) =>
    ended ? [await triggerCompletedEvent(trx, trigger)] : [],
  );
}

async function triggerCompletedEvent(db: Db, trigger: EndingTrigger): Promise<WebhookEvent> {
  const status = await getTriggerStatus(db, trigger.projectId, trigger.campaignId, trigger.id);
  const finishedAt = status.finished_at === null ? Date.now() : Date.parse(status.finished_at);
  return {
    type: 'trigger.completed',
    at: finishedAt,
    data: {
      project_id: trigger.projectId,
      trigger_id: status.trigger_id,
      campaign_id: status.campaign_id,
      state: status.state as 'completed' | 'failed' | 'canceled',
      ...(status.error !== undefined && { error: status.error }),
      created_at: status.created_at,
      started_at: status.started_at,
      finished_at: status.finished_at,
      counters: status.counters,
    },
  };
}

/** `delivery.failed` for a device its batch never sent to (attempts spent): no message id. */
export function unsentEvent(
  trigger: EndingTrigger,
  device: Pick<Device, 'deviceId' | 'projectUserId' | 'provider'>,
  at: number,
): WebhookEvent {
  return {
    type: 'delivery.failed',
    at,
    data: {
      project_id: trigger.projectId,
      message_id: null,
      project_user_id: device.projectUserId,
      device_id: device.deviceId,
      provider: device.provider,
      status: DeliveryStatus.FAILED,
      failure_reason: 'BATCH_ATTEMPTS_EXHAUSTED',
      provider_message_id: null,
      campaign_id: trigger.campaignId,
      trigger_id: trigger.id,
    },
  };
}
