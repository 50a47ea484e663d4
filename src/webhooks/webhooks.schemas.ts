import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { NOTICE_TYPES, type NoticeType } from '../push/notice-outbox.js';

/** A reference to a named schema (registered with `addSchema`), typed as the schema itself. */
export const ref = <T extends TSchema>(schema: T) => Type.Unsafe<Static<T>>(Type.Ref(schema.$id!));

/** Webhook ids are `wh_` + 24 base62 characters. */
export const WEBHOOK_ID_PATTERN = '^wh_[A-Za-z0-9]{1,64}$';

const EventType = Type.Unsafe<NoticeType>({
  type: 'string',
  enum: [...NOTICE_TYPES],
  description:
    '`delivery.sent` (a provider accepted a send to a device), `delivery.failed` (a send to a device ended otherwise), ' +
    '`device.pruned` (token hygiene removed or disabled a device), `trigger.completed` (a campaign trigger ended: completed, failed or canceled), ' +
    "`preferences.updated` (a user's subscription preferences changed, through the API, a preference link or a users import), " +
    '`message.opened` (the recipient opened a message or tapped one of its actions; once per message), ' +
    "`conversion` (a user's event met a campaign's conversion goal; once per goal per send)",
});
const Events = Type.Array(EventType, { minItems: 1, maxItems: NOTICE_TYPES.length, uniqueItems: true });
const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'http(s) URL on a public address; checked with the outbound-URL policy now and at every delivery',
});
const Description = Type.String({ maxLength: 256 });

export const CreateWebhookBody = Type.Object(
  { url: Url, events: Events, description: Type.Optional(Description) },
  {
    $id: 'CreateWebhookRequest',
    additionalProperties: false,
    examples: [
      {
        url: 'https://hooks.example.com/herald',
        events: ['delivery.failed', 'device.pruned', 'trigger.completed'],
        description: 'production alerts',
      },
    ],
  },
);

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    description: Type.Optional(Type.Union([Description, Type.Null()])),
    enabled: Type.Optional(
      Type.Boolean({ description: '`true` re-enables a webhook disabled by the user or after failing deliveries' }),
    ),
  },
  {
    $id: 'UpdateWebhookRequest',
    additionalProperties: false,
    examples: [{ events: ['delivery.sent', 'delivery.failed'], enabled: true }],
  },
);

const webhookFields = {
  webhook_id: Type.String(),
  url: Type.String(),
  events: Type.Array(EventType),
  description: Type.Union([Type.String(), Type.Null()]),
  enabled: Type.Boolean(),
  disabled_reason: Type.Union([
    Type.String({ description: '`DISABLED_BY_USER`, or `DELIVERY_FAILING` after 5 days of failed deliveries' }),
    Type.Null(),
  ]),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
};

const Secret = Type.String({
  description: 'Standard Webhooks signing secret (`whsec_` + base64); shown only in this answer',
});

const webhookExample = {
  webhook_id: 'wh_4Jd9kQ2mXbR7',
  url: 'https://hooks.example.com/herald',
  events: ['delivery.failed', 'device.pruned', 'trigger.completed'],
  description: 'production alerts',
  enabled: true,
  disabled_reason: null,
  created_at: '2026-01-15T09:30:00.000Z',
  updated_at: '2026-01-15T09:30:00.000Z',
};
const secretExample = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

export const Webhook = Type.Object(webhookFields, { $id: 'Webhook', examples: [webhookExample] });
export const CreatedWebhook = Type.Object(
  { ...webhookFields, secret: Secret },
  { $id: 'CreatedWebhook', examples: [{ ...webhookExample, secret: secretExample }] },
);
export const WebhookList = Type.Object(
  { webhooks: Type.Array(ref(Webhook)) },
  { $id: 'WebhookList', examples: [{ webhooks: [webhookExample] }] },
);
export const RotatedWebhookSecret = Type.Object(
  {
    webhook_id: Type.String(),
    secret: Secret,
    previous_secret_expires_at: Type.String({
      format: 'date-time',
      description: 'Until then messages carry a second signature made with the previous secret',
    }),
  },
  {
    $id: 'RotatedWebhookSecret',
    examples: [
      { webhook_id: 'wh_4Jd9kQ2mXbR7', secret: secretExample, previous_secret_expires_at: '2026-01-16T09:30:00.000Z' },
    ],
  },
);

export const WebhookParams = Type.Object({
  webhook_id: Type.String({ pattern: WEBHOOK_ID_PATTERN, examples: ['wh_4Jd9kQ2mXbR7'] }),
});

/** Registered once per app, so the OpenAPI document names them (components.schemas). */
export const WEBHOOK_SCHEMAS = [
  CreateWebhookBody,
  UpdateWebhookBody,
  Webhook,
  CreatedWebhook,
  WebhookList,
  RotatedWebhookSecret,
];
