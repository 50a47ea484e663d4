import { AppError } from '../../errors.js';
import { sendPushNotifications } from '../../push/push.service.js';
import { validatePushItems } from '../../push/push-request.js';
import type { DeliveryResult, PushItem } from '../../push/push.types.js';
import type { JsonObject } from '../model.js';
import { invalidParams } from '../versions/codec.js';
import { defineSkill } from './skill.js';

const FIELDS: Record<string, keyof PushItem> = {
  target: 'target',
  title: 'title',
  body: 'body',
  imageUrl: 'image_url',
  landingUrl: 'landing_url',
};
const TARGETS: Record<string, 'project_user_id' | 'device_id'> = {
  projectUserId: 'project_user_id',
  deviceId: 'device_id',
};

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** camelCase skill items → the REST items, refusing any field the skill does not name. */
function toPushItems(data: JsonObject, field: string): unknown[] {
  const list = data.notifications;
  if (!Array.isArray(list))
    throw invalidParams([{ field: `${field}.notifications`, description: 'must be an array of notifications' }]);
  return list.map((raw: unknown, i) => {
    const at = `${field}.notifications[${i}]`;
    if (!isObject(raw)) throw invalidParams([{ field: at, description: 'must be an object' }]);
    const item: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(raw)) {
      const mapped = FIELDS[key];
      if (!mapped)
        throw invalidParams([
          { field: `${at}.${key}`, description: 'unknown field (use target, title, body, imageUrl, landingUrl)' },
        ]);
      item[mapped] = value;
    }
    if (isObject(item.target)) {
      const target: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(item.target)) {
        const mapped = TARGETS[key];
        if (!mapped)
          throw invalidParams([
            { field: `${at}.target.${key}`, description: 'a target holds exactly one of projectUserId or deviceId' },
          ]);
        target[mapped] = value;
      }
      item.target = target;
    }
    return item;
  });
}

/** The REST rules (rule `push-items`) decide validity; their reason and item index become the violation. */
function validate(items: unknown[], field: string): PushItem[] {
  try {
    return validatePushItems(items);
  } catch (error) {
    if (!(error instanceof AppError) || error.kind !== 'invalid') throw error;
    const index = (error.details as { index?: number } | undefined)?.index;
    throw invalidParams(
      [
        {
          field: index === undefined ? `${field}.notifications` : `${field}.notifications[${index}]`,
          description: error.code,
        },
      ],
      `Invalid push notification parameters: ${error.code}`,
    );
  }
}

const camel = (r: DeliveryResult): JsonObject => ({
  messageId: r.message_id,
  status: r.status,
  additionalParams: {
    deviceId: r.additional_params.device_id,
    fcmMessageId: r.additional_params.fcm_message_id,
    failureReason: r.additional_params.failure_reason,
  },
  createdAt: r.created_at,
  deliveries: r.deliveries.map((d) => ({
    messageId: d.message_id,
    deviceId: d.device_id,
    provider: d.provider,
    status: d.status,
    fcmMessageId: d.fcm_message_id,
    failureReason: d.failure_reason,
  })),
});

/** `send-push-notification` {notifications:[{target:{projectUserId|deviceId}, title, body, imageUrl?, landingUrl?}]} → `delivery-results` (rule `a2a-skills`). */
export const sendPushNotificationSkill = defineSkill({
  descriptor: {
    id: 'send-push-notification',
    name: 'Send push notifications',
    description:
      'Sends ad-hoc push notifications to users (every active device) or devices; returns one delivery result per notification, in order.',
    tags: ['push', 'notifications'],
    examples: [
      '{"skill":"send-push-notification","notifications":[{"target":{"projectUserId":"user-42"},"title":"Hello","body":"Welcome back"}]}',
    ],
  },
  parse: (data, field) => validate(toPushItems(data, field), field),
  async run({ deps, db, projectId }, items) {
    const results = await sendPushNotifications(deps.push, db, projectId, items, { variant: 'device' });
    return { artifactName: 'delivery-results', data: { deliveryResults: results.map(camel) } };
  },
});
