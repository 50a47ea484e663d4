import { Type } from '@sinclair/typebox';

/** Schemas of `GET /api/v1/campaigns/{campaign_id}/results` (rule `campaign-results`). */

const Share = Type.Number({ minimum: 0, maximum: 1 });

export const ResultsQuery = Type.Object(
  {
    trigger_id: Type.Optional(Type.String({ description: 'One trigger of the campaign (404 when it is not one)' })),
    granularity: Type.Optional(
      Type.String({ description: 'minute | hour | day (default): the UTC buckets of `series`' }),
    ),
    from: Type.Optional(Type.String({ description: 'ISO 8601 date-time, inclusive' })),
    to: Type.Optional(Type.String({ description: 'ISO 8601 date-time, exclusive' })),
  },
  { examples: [{ granularity: 'hour', from: '2026-03-02T00:00:00Z', to: '2026-03-09T00:00:00Z' }] },
);

const Rate = Type.Union(
  [
    Type.Object({
      rate: Share,
      low: Share,
      high: Share,
    }),
    Type.Null(),
  ],
  { description: 'opened / delivered with its 95% Wilson score interval [low, high]; null without deliveries' },
);

const Lift = Type.Union(
  [
    Type.Object({
      baseline: Type.String({ description: '`control`, or the first variant when the control has no rate' }),
      difference: Type.Number({ description: 'rate − baseline rate' }),
      low: Type.Number({ description: "95% interval of the difference (Newcombe's hybrid score)" }),
      high: Type.Number(),
      relative: Type.Union([Type.Number(), Type.Null()], {
        description: 'difference / baseline rate; null when the baseline rate is 0',
      }),
    }),
    Type.Null(),
  ],
  { description: 'Null for the baseline itself, outside an experiment, and without a rate' },
);

const counts = {
  sent: Type.Integer({ minimum: 0, description: 'Devices handed to a provider (every outcome but SKIPPED)' }),
  delivered: Type.Integer({ minimum: 0, description: 'Of those, accepted by the provider' }),
  skipped: Type.Integer({ minimum: 0, description: "Devices recorded SKIPPED (the control group's: reason CONTROL)" }),
  opened: Type.Integer({
    minimum: 0,
    description: 'Opens reported (`POST /api/v1/messages/{message_id}:open`), by `opened_at`',
  }),
};
const goalCounts = {
  goal_index: Type.Integer({
    minimum: 0,
    description: "The goal's position in the campaign's `conversion_goals` (0: primary)",
  }),
  event: Type.Union([Type.String(), Type.Null()], { description: "The goal's event; null for a goal since removed" }),
  converted: Type.Integer({ minimum: 0, description: 'Sends that converted on the goal, by `converted_at`' }),
  revenue: Type.Number({ description: "Sum of the conversions' revenue (0 without a revenue property)" }),
};
const GoalCounts = Type.Object(goalCounts);
const Conversions = Type.Array(GoalCounts, {
  description: 'Per conversion goal of the campaign (rule `conversion-goals`), every current goal included',
});

const Variant = Type.Union([Type.String(), Type.Null()], {
  description: 'A variant id, `default` (a control group without variants), `control`, or null outside an experiment',
});

const Arm = Type.Object({
  variant: Variant,
  control: Type.Boolean(),
  ...counts,
  open_rate: Rate,
  open_rate_lift: Lift,
  conversions: Type.Array(
    Type.Object({
      ...goalCounts,
      rate: Type.Union([Type.Object({ rate: Share, low: Share, high: Share }), Type.Null()], {
        description: 'converted / delivered with its 95% Wilson interval; null without deliveries',
      }),
      lift: Lift,
    }),
    { description: 'Per conversion goal: counts, rate and lift over the baseline, as for opens' },
  ),
});

const a = {
  variant: 'a',
  control: false,
  sent: 4100,
  delivered: 4000,
  skipped: 0,
  opened: 400,
  open_rate: { rate: 0.1, low: 0.0911, high: 0.1097 },
  open_rate_lift: null,
  conversions: [
    {
      goal_index: 0,
      event: 'purchase',
      converted: 80,
      revenue: 2400,
      rate: { rate: 0.02, low: 0.0161, high: 0.0248 },
      lift: null,
    },
  ],
};
const b = {
  variant: 'b',
  control: false,
  sent: 4080,
  delivered: 4000,
  skipped: 0,
  opened: 520,
  open_rate: { rate: 0.13, low: 0.1199, high: 0.1408 },
  open_rate_lift: { baseline: 'a', difference: 0.03, low: 0.016, high: 0.044, relative: 0.3 },
  conversions: [
    {
      goal_index: 0,
      event: 'purchase',
      converted: 120,
      revenue: 3900,
      rate: { rate: 0.03, low: 0.0252, high: 0.0357 },
      lift: { baseline: 'a', difference: 0.01, low: 0.0032, high: 0.017, relative: 0.5 },
    },
  ],
};
const control = {
  variant: 'control',
  control: true,
  sent: 0,
  delivered: 0,
  skipped: 910,
  opened: 0,
  open_rate: null,
  open_rate_lift: null,
  conversions: [{ goal_index: 0, event: 'purchase', converted: 0, revenue: 0, rate: null, lift: null }],
};

export const ResultsResponse = Type.Object(
  {
    campaign_id: Type.String(),
    trigger_id: Type.Union([Type.String(), Type.Null()]),
    granularity: Type.Union([Type.Literal('minute'), Type.Literal('hour'), Type.Literal('day')]),
    from: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    to: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    confidence_level: Type.Number({ description: 'Of every interval: 0.95' }),
    totals: Type.Object({ ...counts, open_rate: Rate, conversions: Conversions }),
    variants: Type.Array(Arm, {
      description:
        'Per arm: the variants as the campaign lists them, `default`, sends outside an experiment, `control` last',
    }),
    triggers: Type.Array(Type.Object({ trigger_id: Type.String(), variants: Type.Array(Arm) }), {
      description: 'The same per trigger with outcomes or opens in the window',
    }),
    series: Type.Array(
      Type.Object({
        start: Type.String({ format: 'date-time' }),
        variants: Type.Array(Type.Object({ variant: Variant, ...counts, conversions: Conversions })),
      }),
      { description: 'Buckets holding an outcome or an open, oldest first' },
    ),
  },
  {
    title: 'CampaignResults',
    examples: [
      {
        campaign_id: 'spring-sale-test',
        trigger_id: null,
        granularity: 'day',
        from: null,
        to: null,
        confidence_level: 0.95,
        totals: {
          sent: 8180,
          delivered: 8000,
          skipped: 910,
          opened: 920,
          open_rate: { rate: 0.115, low: 0.1082, high: 0.1221 },
          conversions: [{ goal_index: 0, event: 'purchase', converted: 200, revenue: 6300 }],
        },
        variants: [a, b, control],
        triggers: [{ trigger_id: '01JQ3W6N8B6V2K1T7J5Y4X3R2A', variants: [a, b, control] }],
        series: [
          {
            start: '2026-03-02T00:00:00.000Z',
            variants: [
              {
                variant: 'a',
                sent: 4100,
                delivered: 4000,
                skipped: 0,
                opened: 400,
                conversions: [{ goal_index: 0, event: 'purchase', converted: 80, revenue: 2400 }],
              },
              {
                variant: 'b',
                sent: 4080,
                delivered: 4000,
                skipped: 0,
                opened: 520,
                conversions: [{ goal_index: 0, event: 'purchase', converted: 120, revenue: 3900 }],
              },
              {
                variant: 'control',
                sent: 0,
                delivered: 0,
                skipped: 910,
                opened: 0,
                conversions: [{ goal_index: 0, event: 'purchase', converted: 0, revenue: 0 }],
              },
            ],
          },
        ],
      },
    ],
  },
);
