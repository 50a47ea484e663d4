import { Type } from '@sinclair/typebox';

const Count = Type.Integer({ minimum: 0 });

export const GoalConversionsSchema = Type.Object({
  goal_index: Type.Integer({ minimum: 0, description: "The goal's position in `conversion_goals` (0: primary)" }),
  event: Type.Union([Type.String(), Type.Null()], { description: "The goal's event; null for a goal since removed" }),
  converted: Count,
  revenue: Type.Number({ description: "Sum of the goal's `revenue_property` over the conversions (0 when none)" }),
});
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const TriggerCountersSchema = Type.Object({
  targets: Count,
  in_segment: Count,
  eligible: Count,
  devices: Count,
  skipped: Type.Record(Type.String(), Count, {
    description: 'not_found, not_in_segment, audience_conditions, unsubscribed, no_device, template_render_error, ...',
  }),
  accepted: Count,
  failed: Count,
  failed_by_status: Type.Record(Type.String(), Count),
  tokens_pruned: Count,
  held: Type.Optional(
    Type.Integer({
      minimum: 0,
      description: 'Recipients held by quiet hours, sent when their window ends (rule `quiet-hours`)',
    }),
  ),
  opened: Type.Optional(
    Type.Integer({
      minimum: 0,
      description:
        "Messages of the trigger whose recipient reported an open (`POST /api/v1/messages/{message_id}:open`), each once; in the trigger's status",
    }),
  ),
  conversions: Type.Optional(
    Type.Array(GoalConversionsSchema, {
      description:
        "Per conversion goal of the campaign (rule `conversion-goals`): the trigger's sends that converted and their revenue; in the trigger's status, absent when the campaign has no goals",
    }),
  ),
});

export const TriggerSummarySchema = Type.Object({
  trigger_id: Type.String(),
  campaign_id: Type.String(),
  state: Type.Union([
    Type.Literal('scheduled'),
    Type.Literal('queued'),
    Type.Literal('running'),
    Type.Literal('completed'),
    Type.Literal('failed'),
    Type.Literal('canceled'),
  ]),
  audience: Type.Union([Type.Object({ broadcast: Type.Literal(true) }), Type.Object({ targets: Count })]),
  properties: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
  created_at: Type.String({ format: 'date-time' }),
  started_at: Nullable(Type.String({ format: 'date-time' })),
  finished_at: Nullable(Type.String({ format: 'date-time' })),
  scheduled_at: Nullable(
    Type.String({
      format: 'date-time',
      description: 'When a trigger given `schedule.at` fires (it is `scheduled` until then); null for one sent at once',
    }),
  ),
  audience_evaluated_at: Type.String({
    format: 'date-time',
    description:
      'The audience is evaluated when the trigger fires: users and devices created up to this instant (its creation, or `scheduled_at`) are in it, and segment and audience conditions are read as each batch sends',
  }),
  error: Type.Optional(
    Type.String({ description: 'Why it failed or was canceled (`canceled by request`, `campaign is paused`)' }),
  ),
  schedule_id: Type.Optional(
    Type.String({
      description: 'Only on a trigger a recurring schedule created: that schedule (rule `recurring-schedules`)',
    }),
  ),
  occurrence_at: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'Only on a trigger a recurring schedule created: the occurrence (the cron fire) it was created for',
    }),
  ),
});

/** What a finished trigger looks like (the document's example). */
export const triggerExample = {
  trigger_id: 'trg_9xK4',
  campaign_id: 'order-shipped',
  state: 'completed',
  audience: { targets: 1 },
  properties: { order_id: 'A-1001' },
  created_at: '2026-01-15T09:30:00.000Z',
  started_at: '2026-01-15T09:30:00.050Z',
  finished_at: '2026-01-15T09:30:01.200Z',
  scheduled_at: null,
  audience_evaluated_at: '2026-01-15T09:30:00.000Z',
};

/** A local-time trigger's schedule as it was stored (the project's settings as they stood then). */
export const LocalScheduleStatusSchema = Type.Object(
  {
    at: Type.String({ description: 'The local date-time, `2026-12-24T09:00:00`' }),
    in_local_time: Type.Literal(true),
    missed: Type.Union([Type.Literal('skip'), Type.Literal('send_now'), Type.Literal('next_day')]),
    fallback_time_zone: Type.Union([Type.String(), Type.Null()]),
    time_zone_property: Type.String({ description: "The user property read as the user's zone" }),
    default_time_zone: Type.String({ description: 'The zone of users without a valid one and no fallback_time_zone' }),
  },
  { description: 'Only for a trigger with `schedule.in_local_time`' },
);

/** One wave of a local-time trigger: the users whose zones reach the local time at one instant. */
export const TriggerWaveSchema = Type.Object({
  wave: Count,
  at: Type.String({ format: 'date-time', description: 'When it sends' }),
  utc_offset: Type.Union([Type.String(), Type.Null()], {
    description: 'The offset of its zones at `at` (`+05:30`); null for a wave of missed users sent at once',
  }),
  zones: Type.Array(Type.String(), { description: 'The zones of its users when the trigger started' }),
  missed: Type.Union([Type.Literal('send_now'), Type.Literal('next_day'), Type.Null()], {
    description: 'Set for a wave of users whose local time had passed when the trigger was created',
  }),
  planned: Count,
  sent: Count,
  state: Type.Union([Type.Literal('pending'), Type.Literal('sending'), Type.Literal('done')]),
});

export const TriggerStatusSchema = Type.Composite(
  [
    TriggerSummarySchema,
    Type.Object({
      counters: TriggerCountersSchema,
      progress: Type.Object({ batches_planned: Count, batches_finished: Count, planning_done: Type.Boolean() }),
      schedule: Type.Optional(LocalScheduleStatusSchema),
      expected_end_at: Type.Optional(
        Type.String({
          format: 'date-time',
          description:
            "A rate-limited trigger under way: when it should end at the campaign's `max_sends_per_minute`, an estimate (rule `send-rate-limits`)",
        }),
      ),
      waves: Type.Optional(
        Type.Array(TriggerWaveSchema, {
          description:
            "A local-time trigger's waves, earliest first, once it has started (`planned`: users assigned then; `sent`: accepted sends of its closed batches)",
        }),
      ),
    }),
  ],
  {
    title: 'Trigger',
    examples: [
      {
        ...triggerExample,
        counters: {
          targets: 1,
          in_segment: 1,
          eligible: 1,
          devices: 1,
          skipped: {},
          accepted: 1,
          failed: 0,
          failed_by_status: {},
          tokens_pruned: 0,
        },
        progress: { batches_planned: 1, batches_finished: 1, planning_done: true },
      },
    ],
  },
);

export const TriggerListSchema = Type.Object({
  triggers: Type.Array(TriggerSummarySchema),
  next_cursor: Nullable(Type.String()),
});

export const MAX_TARGETS = 1000;
export const MAX_TRIGGER_PROPERTIES = 256;

const TargetId = Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\u0000-\\u001F\\u007F-\\u009F]+$' });

/** Rule `trigger-body`: a target names one user (by either id) or one device. */
export const TargetSchema = Type.Union([
  Type.Object({ project_user_id: TargetId }, { additionalProperties: false }),
  Type.Object({ device_id: TargetId }, { additionalProperties: false }),
  Type.Object({ user_id: TargetId }, { additionalProperties: false }),
]);

/**
 * A trigger's audience, also a campaign's `default_audience`. `broadcast: true` wins and `targets`
 * is then ignored, whatever it holds, as the spec says; otherwise 1 to 1,000 targets.
 */
export const AudienceSchema = Type.Union([
  Type.Object(
    { broadcast: Type.Literal(true), targets: Type.Optional(Type.Unknown()) },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      broadcast: Type.Optional(Type.Literal(false)),
      targets: Type.Array(TargetSchema, { minItems: 1, maxItems: MAX_TARGETS }),
    },
    { additionalProperties: false },
  ),
]);

/** Any key: TypeBox's default key pattern (`^(.*)$`) skips keys holding a line break, so their values would go unchecked. */
const AnyKey = Type.String({ pattern: '^[\\s\\S]*$' });

/** Rule `trigger-body`: flat values only (string up to 8 KiB, number or boolean), at most 256 keys of 1 to 128 characters. */
export const TriggerPropertiesSchema = Type.Record(
  AnyKey,
  Type.Union([Type.String({ maxLength: 8192 }), Type.Number(), Type.Boolean()]),
  {
    maxProperties: MAX_TRIGGER_PROPERTIES,
    propertyNames: { minLength: 1, maxLength: 128 },
    description: 'Trigger properties for the message template (`{{ trigger.name }}`), at most 256 flat values',
  },
);

/**
 * `schedule` of a trigger body, and of `:reschedule`'s. The schema checks the shape; `parseSchedule`
 * the instant itself (RFC 3339 with an offset, a real date), with messages that say which.
 */
export const ScheduleSchema = Type.Object(
  {
    at: Type.String({
      description:
        'RFC 3339 instant with an offset (Z or ±hh:mm); at most 60 s in the past (then it fires at once) and at most a year ahead',
    }),
  },
  {
    additionalProperties: false,
    description:
      'Send later: the trigger stays `scheduled` until `at`, then fans out as usual. Its audience and conditions are evaluated when it fires.',
    examples: [{ at: '2026-12-24T09:00:00+01:00' }],
  },
);

/** `schedule` of a trigger body: an instant, or a local time sent in each user's zone (rule `local-time-triggers`). */
export const TriggerScheduleSchema = Type.Object(
  {
    at: Type.String({
      description:
        'RFC 3339 instant with an offset (Z or ±hh:mm); at most 60 s in the past (then it fires at once) and at most a year ahead. With `in_local_time`, a local date-time without an offset (`2026-12-24T09:00`, seconds optional)',
    }),
    in_local_time: Type.Optional(
      Type.Boolean({
        description:
          "Send to each user when it is `at` in the user's time zone (the user property `time_zone` unless the project names another; else `fallback_time_zone`, else the project's default zone, UTC unless set). Delivery starts when the first zone (UTC+14) reaches `at` and ends about 26 hours later",
      }),
    ),
    missed: Type.Optional(
      Type.Union([Type.Literal('skip'), Type.Literal('send_now'), Type.Literal('next_day')], {
        description:
          'With `in_local_time`: users whose local `at` had already passed when the trigger was created are skipped (default), sent at once, or sent the next day at that time',
      }),
    ),
    fallback_time_zone: Type.Optional(
      Type.String({
        maxLength: 64,
        description:
          "With `in_local_time`: the IANA zone of users whose zone property is missing or not a valid zone (else the project's default zone)",
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'Send later: the trigger stays `scheduled` until `at`, then fans out as usual. Its audience and conditions are evaluated when it fires (with `in_local_time`, when each wave fires).',
    examples: [
      { at: '2026-12-24T09:00:00+01:00' },
      { at: '2026-12-24T09:00', in_local_time: true, missed: 'next_day', fallback_time_zone: 'Europe/Paris' },
    ],
  },
);

/** The trigger body (whole body optional: an absent one arrives as `null`). */
export const TriggerBodySchema = Type.Union(
  [
    Type.Object(
      {
        audience: Type.Optional(AudienceSchema),
        properties: Type.Optional(TriggerPropertiesSchema),
        schedule: Type.Optional(TriggerScheduleSchema),
      },
      { additionalProperties: false },
    ),
    Type.Null(),
  ],
  {
    description: "Optional; without `audience` the campaign's default audience is used",
    examples: [
      { audience: { targets: [{ project_user_id: 'user-42' }] }, properties: { order_id: 'A-1001' } },
      {
        audience: { broadcast: true },
        properties: { code: 'XMAS' },
        schedule: { at: '2026-12-24T09:00', in_local_time: true, missed: 'skip', fallback_time_zone: 'Europe/Paris' },
      },
    ],
  },
);
