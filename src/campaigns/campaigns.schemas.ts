import { campaignPolicyFields } from './policies/campaign-policy.schemas.js';
import { Type, type Static } from '@sinclair/typebox';
import { optionalSendPolicyFields, sendPolicyFields } from './policies/send-policy.js';
import { experimentFields, optionalExperimentFields } from './experiments/experiment.schemas.js';

/** Campaign ids: given or generated; no `:` (the trigger path ends in `:trigger`) and nothing to escape. */
export const CAMPAIGN_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$';
const campaignIdRegExp = new RegExp(CAMPAIGN_ID_PATTERN);
export const isValidCampaignId = (value: unknown): value is string =>
  typeof value === 'string' && campaignIdRegExp.test(value);

export const CAMPAIGN_STATUSES = ['draft', 'active', 'paused', 'archived'] as const;
export const CampaignStatus = Type.Union([
  Type.Literal('draft'),
  Type.Literal('active'),
  Type.Literal('paused'),
  Type.Literal('archived'),
]);
export type CampaignStatus = Static<typeof CampaignStatus>;

const Template = (maxLength: number) => Type.String({ maxLength });
const messageFields = {
  title: Type.Optional(Template(1024)),
  body: Type.Optional(Template(4096)),
  image_url: Type.Optional(Template(2048)),
  landing_url: Type.Optional(Template(2048)),
};
const LocalizedFieldsSchema = Type.Object(messageFields, {
  additionalProperties: false,
  description:
    'Fields for users of this locale; a field left out falls back along the chain (`fr-CA`, `fr`, the default)',
});
export const MessageTemplateSchema = Type.Object(
  {
    ...messageFields,
    locales: Type.Optional(
      Type.Record(Type.String(), LocalizedFieldsSchema, {
        maxProperties: 50,
        propertyNames: { maxLength: 64 },
        description:
          'Per-locale fields keyed by BCP 47 tag (at most 50; keys compared without case and stored canonical, `fr-ca` as `fr-CA`); rule `message-locales`',
      }),
    ),
    locale_property: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        pattern: '^[^"\\\\\\u0000-\\u001f]+$',
        description: "The user property holding the user's BCP 47 locale (default `locale`)",
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Liquid templates; `trigger`, `user` and `campaign` are in scope, and `event` in an event-triggered campaign',
    examples: [
      {
        title: 'Your order shipped',
        body: 'It arrives on {{ trigger.eta }}.',
        locales: {
          fr: { title: 'Votre commande est partie', body: 'Elle arrive le {{ trigger.eta }}.' },
          'fr-CA': { title: 'Votre commande est en route' },
        },
      },
    ],
  },
);

const ConditionSchema = Type.Unknown({
  description:
    'Condition tree: {all|any:[...]}, {not:{...}}, {property,op,value|value_from}, {event,op,count_gte?,within_days?}',
});
const AudienceSchema = Type.Unknown({
  description: '{"broadcast": true} (the whole segment, default) or {"targets": [{project_user_id|device_id|user_id}]}',
});

const EventTriggerSchema = Type.Unknown({
  description:
    'Event-triggered campaign: {"event": "<name>", "condition"?: <property conditions over the event\'s properties>, "delay": "PT1H" | <seconds> (0 to 30 days), "cancel_on"?: [{"event", "condition"?}]} (rule `event-triggered-campaigns`)',
  examples: [
    {
      event: 'cart_abandoned',
      condition: { property: 'total', op: 'gte', value: 20 },
      delay: 'PT1H',
      cancel_on: [{ event: 'purchase' }],
    },
  ],
});

const TopicSchema = Type.Union([Type.String({ maxLength: 64 }), Type.Null()], {
  description:
    'A topic key of the project (rule `subscription-topics`): users not subscribed to it are skipped (`skipped.unsubscribed`); null for none',
});

const ConversionGoalsSchema = Type.Union(
  [
    Type.Array(Type.Unknown(), {
      description:
        'Up to four goals, the first primary: {"event": "<name>", "where"?: <property conditions over the event\'s properties>, "deadline": "<n>h" | "<n>d" | <seconds> (1 hour to 30 days), "counted_from"?: "send" (default) | "open", "revenue_property"?: "<property>"} (rule `conversion-goals`)',
    }),
    Type.Null(),
  ],
  {
    examples: [
      [
        { event: 'purchase', deadline: '3d', revenue_property: 'amount' },
        {
          event: 'app_opened',
          where: { property: 'screen', op: 'eq', value: 'cart' },
          deadline: '24h',
          counted_from: 'open',
        },
      ],
    ],
  },
);

const editable = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  status: CampaignStatus,
  api_triggered: Type.Boolean(),
  segment: Type.Union([ConditionSchema, Type.Null()]),
  audience_conditions: Type.Union([ConditionSchema, Type.Null()]),
  default_audience: AudienceSchema,
  message: MessageTemplateSchema,
  event_trigger: Type.Union([EventTriggerSchema, Type.Null()]),
  ...campaignPolicyFields,
  ...sendPolicyFields,
  topic: TopicSchema,
  conversion_goals: ConversionGoalsSchema,
  ...experimentFields(MessageTemplateSchema),
};

export const CreateCampaignBody = Type.Object(
  {
    campaign_id: Type.Optional(Type.String({ pattern: CAMPAIGN_ID_PATTERN })),
    name: editable.name,
    status: Type.Optional(editable.status),
    api_triggered: Type.Optional(editable.api_triggered),
    segment: Type.Optional(editable.segment),
    audience_conditions: Type.Optional(editable.audience_conditions),
    default_audience: Type.Optional(editable.default_audience),
    message: editable.message,
    event_trigger: Type.Optional(editable.event_trigger),
    quiet_hours: Type.Optional(editable.quiet_hours),
    max_sends_per_minute: Type.Optional(editable.max_sends_per_minute),
    ...optionalSendPolicyFields,
    topic: Type.Optional(editable.topic),
    conversion_goals: Type.Optional(editable.conversion_goals),
    ...optionalExperimentFields(MessageTemplateSchema),
  },
  {
    additionalProperties: false,
    title: 'CreateCampaignRequest',
    examples: [
      {
        campaign_id: 'order-shipped',
        name: 'Order shipped',
        status: 'active',
        api_triggered: true,
        default_audience: { broadcast: true },
        message: {
          title: 'Your order {{ trigger.order_id }} shipped',
          body: 'Hi {{ user.first_name | default: "there" }}, it arrives on {{ trigger.eta }}.',
          landing_url: 'https://example.com/orders/{{ trigger.order_id }}',
        },
      },
      {
        campaign_id: 'cart-reminder',
        name: 'Cart reminder',
        status: 'active',
        event_trigger: { event: 'cart_abandoned', delay: 'PT1H', cancel_on: [{ event: 'purchase' }] },
        tags: ['promo'],
        reeligibility: { mode: 'window', seconds: 604800 },
        message: { title: 'Still thinking it over?', body: 'Your {{ event.properties.items }} items are waiting.' },
      },
      {
        campaign_id: 'weekly-digest',
        name: 'Weekly digest',
        status: 'active',
        api_triggered: true,
        quiet_hours: { start: '21:00', end: '08:00' },
        max_sends_per_minute: 6000,
        message: { title: 'Your week', body: 'Five new posts from people you follow.' },
      },
      {
        campaign_id: 'spring-sale',
        name: 'Spring sale',
        status: 'active',
        api_triggered: true,
        topic: 'promotions',
        message: { title: 'Spring sale', body: '20% off everything this week.' },
      },
      {
        campaign_id: 'winback',
        name: 'Win back',
        status: 'active',
        api_triggered: true,
        message: { title: 'We miss you', body: 'Your basket is still here.' },
        conversion_goals: [
          { event: 'purchase', deadline: '3d', revenue_property: 'amount' },
          { event: 'app_opened', deadline: '24h', counted_from: 'open' },
        ],
      },
      {
        campaign_id: 'spring-sale-test',
        name: 'Spring sale: which title works',
        status: 'active',
        api_triggered: true,
        message: { title: 'Spring sale', body: '20% off everything this week.' },
        variants: [
          { variant_id: 'a', weight: 50, message: { title: 'Spring sale', body: '20% off everything this week.' } },
          {
            variant_id: 'b',
            weight: 50,
            message: { title: '20% off, this week only', body: 'Everything, until Sunday.' },
          },
        ],
        control_percent: 10,
      },
    ],
  },
);
export type CreateCampaignBody = Static<typeof CreateCampaignBody>;

export const PatchCampaignBody = Type.Partial(Type.Object(editable, { additionalProperties: false }), {
  additionalProperties: false,
  title: 'UpdateCampaignRequest',
  examples: [
    { status: 'paused' },
    { topic: 'promotions' },
    { conversion_goals: [{ event: 'purchase', where: { property: 'amount', op: 'gte', value: 10 }, deadline: 86400 }] },
    { control_percent: 5, variants: [{ variant_id: 'a', weight: 1, message: { title: 'Hi', body: 'Version A' } }] },
    { variants: [], control_percent: 0 },
  ],
});
export type PatchCampaignBody = Static<typeof PatchCampaignBody>;

const campaignExample = {
  campaign_id: 'order-shipped',
  name: 'Order shipped',
  status: 'active',
  api_triggered: true,
  segment: null,
  audience_conditions: null,
  default_audience: { broadcast: true },
  message: { title: 'Your order {{ trigger.order_id }} shipped', body: 'It arrives on {{ trigger.eta }}.' },
  event_trigger: null,
  quiet_hours: null,
  max_sends_per_minute: null,
  critical: false,
  tags: ['orders'],
  respect_caps: true,
  counts_toward_caps: true,
  reeligibility: { mode: 'always' },
  topic: null,
  conversion_goals: [{ event: 'order_received', deadline: '7d', counted_from: 'send' }],
  variants: [],
  control_percent: 0,
  winner: null,
  created_at: '2026-01-15T09:30:00.000Z',
  updated_at: '2026-01-15T09:30:00.000Z',
};

export const CampaignResponse = Type.Object(
  {
    campaign_id: Type.String(),
    name: Type.String(),
    status: CampaignStatus,
    api_triggered: Type.Boolean(),
    segment: Type.Unknown(),
    audience_conditions: Type.Unknown(),
    default_audience: Type.Unknown(),
    message: MessageTemplateSchema,
    event_trigger: Type.Unknown({ description: 'null, or the event trigger (rule `event-triggered-campaigns`)' }),
    quiet_hours: editable.quiet_hours,
    max_sends_per_minute: editable.max_sends_per_minute,
    ...sendPolicyFields,
    topic: Type.Union([Type.String(), Type.Null()], {
      description: 'The subscription topic (rule `subscription-topics`), or null',
    }),
    conversion_goals: Type.Array(
      Type.Object({
        event: Type.String(),
        where: Type.Optional(Type.Unknown()),
        deadline: Type.Union([Type.String(), Type.Integer()]),
        counted_from: Type.Union([Type.Literal('send'), Type.Literal('open')]),
        revenue_property: Type.Optional(Type.String()),
      }),
      { description: 'The conversion goals, the first primary (rule `conversion-goals`); [] for none' },
    ),
    ...experimentFields(MessageTemplateSchema),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { title: 'Campaign', examples: [campaignExample] },
);

export const CampaignList = Type.Object(
  { campaigns: Type.Array(CampaignResponse), next_cursor: Type.Union([Type.String(), Type.Null()]) },
  { title: 'CampaignList', examples: [{ campaigns: [campaignExample], next_cursor: null }] },
);

export const CampaignParams = Type.Object({ campaign_id: Type.String() });
/** Query strings are not coerced (the app's ajv has `coerceTypes: false`), so numbers arrive as text. */
export const ListQuery = Type.Object({
  limit: Type.Optional(Type.String({ pattern: '^([1-9]|[1-9][0-9]|100)$', description: '1 to 100, default 50' })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
});
export const ListCampaignsQuery = Type.Composite([ListQuery, Type.Object({ status: Type.Optional(CampaignStatus) })]);
