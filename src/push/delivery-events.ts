import type { WebhookEvent } from './delivery-event-publisher.js';
import { DeliveryStatus, type DeviceSend, type DeviceSendOutcome } from './push.types.js';

/** The campaign and trigger a send belongs to, as event fields. */
const campaignRefs = (send: DeviceSend) => ({
  ...(send.refs?.campaignId !== undefined && { campaign_id: send.refs.campaignId }),
  ...(send.refs?.triggerId !== undefined && { trigger_id: send.refs.triggerId }),
});

/** `delivery.sent` for a send the provider accepted, `delivery.failed` for any other end. */
export function deliveryEvent(projectId: string, send: DeviceSend, outcome: DeviceSendOutcome): WebhookEvent {
  return {
    type: outcome.status === DeliveryStatus.ACCEPTED ? 'delivery.sent' : 'delivery.failed',
    at: outcome.completedAt,
    data: {
      project_id: projectId,
      message_id: outcome.messageId,
      project_user_id: send.device.projectUserId,
      device_id: send.device.deviceId,
      provider: send.device.provider,
      status: outcome.status,
      failure_reason: outcome.failureReason ?? null,
      provider_message_id: outcome.providerMessageId ?? null,
      ...campaignRefs(send),
    },
  };
}

/** `device.pruned`: token hygiene removed (address gone) or disabled (address malformed) the device of `send`. */
export function prunedEvent(
  projectId: string,
  send: DeviceSend,
  messageId: string,
  action: 'removed' | 'disabled',
  reason: string,
  at: number,
): WebhookEvent {
  return {
    type: 'device.pruned',
    at,
    data: {
      project_id: projectId,
      device_id: send.device.deviceId,
      project_user_id: send.device.projectUserId,
      provider: send.device.provider,
      action,
      reason,
      message_id: messageId,
      ...campaignRefs(send),
    },
  };
}
