import { GoalConversionsSchema } from '../triggers/trigger.schemas.js';
import { Type } from '@sinclair/typebox';
import { ProjectUserId } from '../../users/users.schemas.js';

/** Schemas of the console's campaign reads: preview, delivery analytics, trigger stream. */

export const ErrorBody = Type.Object({ error: Type.String() });
export const errorResponses = { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody };
export const security = [{ projectId: [], apiKey: [] }];
export const tags = ['campaigns'];

const Count = Type.Integer({ minimum: 0 });
const Json = Type.Record(Type.String(), Type.Unknown());

export const PreviewBody = Type.Object(
  {
    project_user_id: ProjectUserId,
    properties: Type.Optional(
      Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()]), {
        description: 'Trigger properties, as a trigger would give them (`trigger.*` in the templates)',
      }),
    ),
    event: Type.Optional(
      Type.Object(
        {
          properties: Type.Optional(Json),
          timestamp: Type.Optional(Type.String({ format: 'date-time' })),
        },
        {
          additionalProperties: false,
          description:
            "An event-triggered campaign's sample event (`event.*`): its properties (empty by default) and time (now by default)",
        },
      ),
    ),
    locale: Type.Optional(
      Type.String({
        maxLength: 64,
        description:
          "Preview as a user of this BCP 47 locale instead of the user's own (rule `message-locales`): its fields, falling back along the chain",
      }),
    ),
  },
  {
    title: 'PreviewCampaignRequest',
    additionalProperties: false,
    examples: [
      { project_user_id: 'user-42', properties: { coupon: 'SPRING' } },
      { project_user_id: 'user-42', event: { properties: { items: 3 } } },
      { project_user_id: 'user-42', locale: 'fr-CA' },
    ],
  },
);

export const PreviewResponse = Type.Object(
  {
    title: Type.String({ description: "'' when the title renders empty (the payloads then carry none)" }),
    body: Type.String({ description: "'' when the body renders empty" }),
    image_url: Type.Optional(Type.String()),
    landing_url: Type.Optional(Type.String()),
    payloads: Type.Array(
      Type.Object({
        provider: Type.Union([Type.Literal('fcm'), Type.Literal('apns'), Type.Literal('webpush')]),
        payload: Type.Unsafe<Record<string, unknown>>({
          ...Json,
          description:
            "The JSON the provider receives for one device (FCM: without the device's token; Web Push: the plaintext before encryption)",
        }),
        bytes: Count,
        limit: Count,
        fits: Type.Boolean(),
      }),
    ),
    warnings: Type.Array(
      Type.Object({ code: Type.Literal('missing_property'), property: Type.String(), message: Type.String() }),
    ),
    locale: Type.Object(
      {
        user_locale: Type.Union([Type.String(), Type.Null()], {
          description: "The locale previewed: the request's, else the user's (canonical); null when the user has none",
        }),
        message_locale: Type.Union([Type.String(), Type.Null()], {
          description:
            'The message locale whose fields were used (fields it lacks come from the next of the chain); null: the default fields',
        }),
      },
      { description: 'Rule `message-locales`' },
    ),
  },
  {
    title: 'CampaignPreview',
    examples: [
      {
        title: 'Hello Ada',
        body: 'Your code: {{trigger.coupon}}',
        payloads: [
          {
            provider: 'fcm',
            payload: { message: { notification: { title: 'Hello Ada', body: 'Your code: {{trigger.coupon}}' } } },
            bytes: 83,
            limit: 4096,
            fits: true,
          },
        ],
        warnings: [
          { code: 'missing_property', property: 'trigger.coupon', message: 'trigger property "coupon" was not given' },
        ],
        locale: { user_locale: 'fr-CA', message_locale: 'fr' },
      },
    ],
  },
);

export const CampaignIdParams = Type.Object({ campaign_id: Type.String() });
export const TriggerParams = Type.Object({ campaign_id: Type.String(), trigger_id: Type.String() });

export const AnalyticsQuery = Type.Object({
  bucket: Type.Optional(Type.String({ description: 'minute | hour (default) | day; UTC buckets' })),
  since: Type.Optional(Type.String({ description: 'ISO 8601 date-time, inclusive' })),
  until: Type.Optional(Type.String({ description: 'ISO 8601 date-time, exclusive' })),
});

export const AnalyticsResponse = Type.Object(
  {
    bucket: Type.Union([Type.Literal('minute'), Type.Literal('hour'), Type.Literal('day')]),
    totals: Type.Object({
      by_state: Type.Record(Type.String(), Count, { description: 'DELIVERY_RESULT_STATUS_* → outcomes' }),
      by_provider: Type.Record(Type.String(), Type.Record(Type.String(), Count), {
        description: 'fcm | apns | webpush (unknown: rows older than the provider column) → state → outcomes',
      }),
      by_reason: Type.Record(Type.String(), Count, {
        description: "The provider's raw code or Herald's skip reason → outcomes",
      }),
      users_by_reason: Type.Record(Type.String(), Count, {
        description:
          'Audience members (users; targets of a targeted trigger) sent nothing before any device was tried, by reason: NOT_FOUND, NOT_IN_SEGMENT, AUDIENCE_CONDITIONS, UNSUBSCRIBED, NO_DEVICE; and HELD, held by quiet hours for a later trigger. From batches closed in the window',
      }),
      opened: Type.Integer({
        minimum: 0,
        description:
          'Messages whose recipient reported an open (`POST /api/v1/messages/{message_id}:open`), each once, by when it was opened',
      }),
      conversions: Type.Array(GoalConversionsSchema, {
        description:
          "Per conversion goal of the campaign (rule `conversion-goals`), the first primary: sends that converted (by the converting event's time, in the window) and their revenue; [] without goals",
      }),
      by_variant: Type.Record(Type.String(), Type.Object({ sent: Count, failed: Count, skipped: Count }), {
        description:
          "Campaigns with variants or a control group (rule `campaign-experiments`): variant id (or `control`) → device outcomes; sent = accepted, skipped = not sent (the control group's devices, render skips, caps). Empty outside an experiment",
      }),
    }),
    series: Type.Array(
      Type.Object({
        start: Type.String({ format: 'date-time' }),
        sent: Count,
        failed: Count,
        skipped: Count,
        opened: Count,
      }),
      {
        description:
          'Buckets holding an outcome or an open, oldest first; sent = accepted, skipped = not sent by Herald (`DELIVERY_RESULT_STATUS_SKIPPED`: render skips, caps, a control group), failed = every other outcome, opened = opens reported in the bucket (by `opened_at`)',
      },
    ),
  },
  {
    title: 'DeliveryAnalytics',
    examples: [
      {
        bucket: 'minute',
        totals: {
          by_state: { DELIVERY_RESULT_STATUS_ACCEPTED: 2, DELIVERY_RESULT_STATUS_TOKEN_UNREGISTERED: 1 },
          by_provider: { fcm: { DELIVERY_RESULT_STATUS_ACCEPTED: 2, DELIVERY_RESULT_STATUS_TOKEN_UNREGISTERED: 1 } },
          by_reason: { UNREGISTERED: 1 },
          users_by_reason: { UNSUBSCRIBED: 3, NO_DEVICE: 1, HELD: 2 },
          opened: 1,
          conversions: [{ goal_index: 0, event: 'purchase', converted: 1, revenue: 42.5 }],
          by_variant: {},
        },
        series: [
          { start: '2026-11-24T10:15:00.000Z', sent: 2, failed: 1, skipped: 0, opened: 0 },
          { start: '2026-11-24T10:17:00.000Z', sent: 0, failed: 0, skipped: 0, opened: 1 },
        ],
      },
    ],
  },
);

const NullableText = Type.Union([Type.String(), Type.Null()]);

export const TriggerDeliveryList = Type.Object(
  {
    deliveries: Type.Array(
      Type.Object({
        device_id: Type.String(),
        project_user_id: Type.Union([Type.String(), Type.Null()], { description: 'null once the user is deleted' }),
        provider: NullableText,
        status: Type.String({
          description: '`DELIVERY_RESULT_STATUS_*`; `..._SKIPPED` when the message did not render',
        }),
        failure_reason: Type.Union([Type.String(), Type.Null()], {
          description: "The provider's code, or the skip reason (`TEMPLATE_RENDER_ERROR`, ...)",
        }),
        detail: Type.Optional(Type.String({ description: 'Why a skip happened (the template error)' })),
        message_id: Type.Union([Type.String(), Type.Null()], {
          description: 'The message (`GET /api/v1/messages/{message_id}`); null for a skip, which sent nothing',
        }),
        created_at: Type.String({ format: 'date-time' }),
      }),
    ),
    next_cursor: NullableText,
  },
  {
    title: 'TriggerDeliveryList',
    examples: [
      {
        deliveries: [
          {
            device_id: '0c5b2f1e-8d1a-4a57-9d0e-2f3b4c5d6e7f',
            project_user_id: 'user-42',
            provider: 'fcm',
            status: 'DELIVERY_RESULT_STATUS_ACCEPTED',
            failure_reason: null,
            message_id: '0194a3b2-7c1d-7e8f-9a0b-1c2d3e4f5a6b',
            created_at: '2026-01-15T09:30:00.412Z',
          },
        ],
        next_cursor: null,
      },
    ],
  },
);
