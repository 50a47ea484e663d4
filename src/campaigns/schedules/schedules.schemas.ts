import { Type, type Static } from '@sinclair/typebox';
import { AudienceSchema, TriggerPropertiesSchema } from '../triggers/trigger.schemas.js';

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()]);
const Instant = (description: string) => Type.String({ maxLength: 64, description });
const DateTime = Type.String({ format: 'date-time' });

/** Rule `recurring-schedules`: the body of `POST /api/v1/campaigns/{campaign_id}/schedules`. */
export const CreateScheduleBody = Type.Object(
  {
    cron: Type.String({
      maxLength: 120,
      description:
        'Five fields, minute hour day-of-month month day-of-week (croner syntax: lists, ranges, steps, `L`, `W`, `#`, names such as MON or JAN), or a nickname such as `@daily`; no seconds field. At most one fire per `SCHEDULE_MIN_INTERVAL_MS` (15 minutes by default).',
    }),
    time_zone: Type.String({
      maxLength: 64,
      description: 'IANA time zone the cron reads its hours in (`Europe/Paris`); DST follows the zone',
    }),
    in_local_time: Type.Optional(
      Type.Boolean({
        description:
          "Each occurrence's wall time (the cron fire in `time_zone`) is sent at that wall time in each user's own time zone; `time_zone` is the fallback for users without one",
      }),
    ),
    audience: Type.Optional(AudienceSchema),
    properties: Type.Optional(TriggerPropertiesSchema),
    starts_at: Type.Optional(Instant('RFC 3339 instant; no occurrence before it (inclusive); at most a year ahead')),
    ends_at: Type.Optional(Instant('RFC 3339 instant; no occurrence after it (inclusive); after `starts_at` and now')),
  },
  {
    additionalProperties: false,
    title: 'CreateRecurringScheduleRequest',
    description: "Without `audience` each occurrence reaches the campaign's default audience as it stands then",
    examples: [
      {
        cron: '0 9 * * 1',
        time_zone: 'Europe/Paris',
        audience: { broadcast: true },
        properties: { digest: 'weekly' },
        ends_at: '2027-06-30T00:00:00Z',
      },
    ],
  },
);
export type CreateScheduleBody = Static<typeof CreateScheduleBody>;

export const ScheduleSchema = Type.Object(
  {
    schedule_id: Type.String(),
    campaign_id: Type.String(),
    cron: Type.String(),
    time_zone: Type.String(),
    in_local_time: Type.Boolean(),
    audience: Type.Union([AudienceSchema, Type.Null()], { description: "null: the campaign's default audience" }),
    properties: TriggerPropertiesSchema,
    starts_at: Nullable(DateTime),
    ends_at: Nullable(DateTime),
    state: Type.Union([Type.Literal('active'), Type.Literal('paused'), Type.Literal('ended')], {
      description: '`ended` once no occurrence is left before `ends_at` (or within a year)',
    }),
    next_occurrence_at: Nullable(
      Type.String({ format: 'date-time', description: 'The next cron fire; null while paused or once ended' }),
    ),
    occurrences: Type.Integer({ minimum: 0, description: 'Occurrences that created a trigger' }),
    skipped: Type.Integer({ minimum: 0, description: 'Occurrences skipped (campaign not active, missed...)' }),
    last_occurrence: Type.Union([
      Type.Object({
        at: DateTime,
        trigger_id: Nullable(Type.String()),
        skipped_reason: Nullable(Type.String()),
      }),
      Type.Null(),
    ]),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { description: 'A recurring schedule of a campaign (rule `recurring-schedules`)' },
);

export const scheduleExample = {
  schedule_id: '0b6f1c9e-5f7e-4c39-9a0e-2f3c1d2e4a5b',
  campaign_id: 'weekly-digest',
  cron: '0 9 * * 1',
  time_zone: 'Europe/Paris',
  in_local_time: false,
  audience: { broadcast: true },
  properties: { digest: 'weekly' },
  starts_at: null,
  ends_at: '2027-06-30T00:00:00.000Z',
  state: 'active',
  next_occurrence_at: '2026-12-07T08:00:00.000Z',
  occurrences: 1,
  skipped: 0,
  last_occurrence: { at: '2026-11-30T08:00:00.000Z', trigger_id: 'trg_9xK4', skipped_reason: null },
  created_at: '2026-11-28T12:00:00.000Z',
  updated_at: '2026-11-30T08:00:00.120Z',
};

export const ScheduleResponse = Type.Composite([ScheduleSchema], {
  title: 'RecurringSchedule',
  examples: [scheduleExample],
});

export const ScheduleList = Type.Object(
  { schedules: Type.Array(ScheduleSchema), next_cursor: Nullable(Type.String()) },
  { title: 'RecurringScheduleList', examples: [{ schedules: [scheduleExample], next_cursor: null }] },
);

export const ScheduleParams = Type.Object({ campaign_id: Type.String(), schedule_id: Type.String() });
