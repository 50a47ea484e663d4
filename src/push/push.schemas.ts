import { Type } from '@sinclair/typebox';
import { MAX_URL_LENGTH } from '../lib/schema-validator.js';
import { ProjectUserId } from '../users/users.schemas.js';
import { DeliveryStatus } from './push.types.js';

/** Rule `push-items`: more than this many items is a 400 (500 is the advised size). */
export const MAX_PUSH_ITEMS = 1000;
export const MAX_TITLE_LENGTH = 1024;
export const MAX_BODY_LENGTH = 4096;

const Url = Type.String({ format: 'http-url', maxLength: MAX_URL_LENGTH, description: 'Absolute http(s) URL' });
const DeviceId = Type.String({ minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]+$' });

/**
 * One item of both send endpoints and the A2A skill; `push-request.ts` names the broken rule of an
 * item this refuses. A target holds exactly one of the two ids; unknown fields are refused, so a
 * misspelt field never sends an empty notification.
 */
export const PushNotificationItem = Type.Object(
  {
    target: Type.Union([
      Type.Object({ project_user_id: ProjectUserId }, { additionalProperties: false }),
      Type.Object({ device_id: DeviceId }, { additionalProperties: false }),
    ]),
    title: Type.Optional(Type.String({ maxLength: MAX_TITLE_LENGTH })),
    body: Type.Optional(Type.String({ maxLength: MAX_BODY_LENGTH })),
    image_url: Type.Optional(Url),
    landing_url: Type.Optional(Url),
    ignore_quiet_hours: Type.Optional(
      Type.Boolean({
        description:
          'Accepted for clients that set it: a direct send is never held by quiet hours or do-not-disturb windows (rule `quiet-hours`)',
      }),
    ),
  },
  { additionalProperties: false, description: 'A non-blank title or body is required' },
);

export const SendPushBody = Type.Object(
  { push_notifications: Type.Array(PushNotificationItem, { minItems: 1, maxItems: MAX_PUSH_ITEMS }) },
  {
    title: 'SendPushRequest',
    examples: [
      {
        push_notifications: [
          { target: { project_user_id: 'user-42' }, title: 'Your order shipped', body: 'Arriving on Thursday' },
          { target: { device_id: 'dev_0c5b2f' }, title: 'Welcome', landing_url: 'https://example.com/welcome' },
        ],
      },
    ],
  },
);

const Status = Type.Unsafe<DeliveryStatus>({
  type: 'string',
  enum: Object.values(DeliveryStatus),
  description: 'Delivery status',
});

const AdditionalParams = Type.Object({
  device_id: Type.String(),
  fcm_message_id: Type.String({ description: "The provider's message id (FCM name, APNs apns-id, Web Push Location)" }),
  failure_reason: Type.String({
    description: "The provider's raw code, or Herald's when no provider answered; empty on success",
  }),
});

const Delivery = Type.Object({
  message_id: Type.String(),
  device_id: Type.String(),
  provider: Type.String(),
  status: Status,
  fcm_message_id: Type.String(),
  failure_reason: Type.String(),
});

const Deliveries = Type.Array(Delivery, { description: "Each device's outcome (one per device of a user target)" });

const accepted = {
  device_id: 'dev_0c5b2f',
  fcm_message_id: 'projects/my-firebase-project/messages/0:1736933400000000%abc',
  failure_reason: '',
};
const acceptedDelivery = {
  message_id: 'msg_7hQ2',
  device_id: accepted.device_id,
  provider: 'fcm',
  status: DeliveryStatus.ACCEPTED,
  fcm_message_id: accepted.fcm_message_id,
  failure_reason: '',
};

export const MessagesSendResponse = Type.Object(
  {
    delivery_results: Type.Array(
      Type.Object({ message_id: Type.String(), additional_params: AdditionalParams, deliveries: Deliveries }),
    ),
  },
  {
    title: 'SendMessagesResponse',
    examples: [
      { delivery_results: [{ message_id: 'msg_7hQ2', additional_params: accepted, deliveries: [acceptedDelivery] }] },
    ],
  },
);

export const DeviceSendResponse = Type.Object(
  {
    delivery_results: Type.Array(
      Type.Object({
        message_id: Type.String(),
        status: Status,
        additional_params: AdditionalParams,
        created_at: Type.String(),
        deliveries: Deliveries,
      }),
    ),
  },
  {
    title: 'SendPushNotificationsResponse',
    examples: [
      {
        delivery_results: [
          {
            message_id: 'msg_7hQ2',
            status: DeliveryStatus.ACCEPTED,
            additional_params: accepted,
            created_at: '2026-01-15T09:30:00.000Z',
            deliveries: [acceptedDelivery],
          },
        ],
      },
    ],
  },
);

export const MessageParams = Type.Object({ message_id: Type.String() });

const messageExample = {
  message_id: 'msg_7hQ2',
  status: DeliveryStatus.ACCEPTED,
  target: { project_user_id: 'user-42' },
  provider: 'fcm',
  additional_params: accepted,
  attempts: 1,
  created_at: '2026-01-15T09:30:00.000Z',
  completed_at: '2026-01-15T09:30:00.412Z',
};

export const MessageResponse = Type.Object(
  {
    message_id: Type.String(),
    status: Status,
    target: Type.Union([Type.Object({ project_user_id: Type.String() }), Type.Object({ device_id: Type.String() })]),
    provider: Type.Union([Type.String(), Type.Null()]),
    additional_params: AdditionalParams,
    trigger_id: Type.Optional(Type.String()),
    attempts: Type.Integer(),
    created_at: Type.String(),
    completed_at: Type.String(),
    opened_at: Type.Optional(
      Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
        description:
          "When the recipient opened it (the first open reported through `POST /api/v1/messages/{message_id}:open`); null when none was. Shown by `GET /api/v1/messages/{message_id}` and a user's message list",
      }),
    ),
  },
  {
    title: 'Message',
    examples: [messageExample],
  },
);

export const UserMessagesQuery = Type.Object({
  limit: Type.Optional(Type.String({ pattern: '^([1-9]|[1-9][0-9]|100)$', description: '1 to 100, default 20' })),
  cursor: Type.Optional(Type.String({ maxLength: 512, description: '`next_cursor` of the previous page' })),
});

export const MessageList = Type.Object(
  {
    messages: Type.Array(MessageResponse),
    next_cursor: Type.Union([Type.String(), Type.Null()]),
  },
  {
    title: 'MessageList',
    examples: [{ messages: [messageExample], next_cursor: null }],
  },
);

/** The optional body of `POST /api/v1/messages/{message_id}:open`. */
export const MessageOpenBody = Type.Object(
  {
    action: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        description:
          "The id of the action the user tapped (the service worker's `event.action`, an APNs category action identifier, an Android action); absent for a tap on the notification itself",
      }),
    ),
    opened_at: Type.Optional(
      Type.String({
        maxLength: 64,
        description:
          'RFC 3339 date-time of the open (default: when the request arrives); held between the send and now, as device clocks drift',
      }),
    ),
  },
  {
    title: 'MessageOpenRequest',
    additionalProperties: false,
    examples: [{ action: 'reply', opened_at: '2026-01-15T09:31:12Z' }],
  },
);

export const MessageOpenResponse = Type.Object(
  {
    message_id: Type.String(),
    opened_at: Type.String({ format: 'date-time', description: 'When it was first opened (a later report keeps it)' }),
    action: Type.Union([Type.String(), Type.Null()], {
      description: "The first open's action id; null for the notification itself",
    }),
  },
  {
    title: 'MessageOpen',
    examples: [
      { message_id: '0193b1d2-7c4e-7a51-9d0e-2f6c1a3b4c5d', opened_at: '2026-01-15T09:31:12.000Z', action: 'reply' },
    ],
  },
);
