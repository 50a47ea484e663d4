import { Type } from '@sinclair/typebox';

const Count = Type.Integer({ minimum: 0 });
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const TriggerCountersSchema = Type.Object({
  targets: Count,
  in_segment: Count,
  eligible: Count,
  devices: Count,
  skipped: Type.Record(Type.String(), Count, {
    description: 'not_found, not_in_segment, audience_conditions, no_device, template_render_error, ...',
  }),
  accepted: Count,
  failed: Count,
  failed_by_status: Type.Record(Type.String(), Count),
  tokens_pruned: Count,
});

export const TriggerSummarySchema = Type.Object({
  trigger_id: Type.String(),
  campaign_id: Type.String(),
  state: Type.Union([
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
  error: Type.Optional(Type.String()),
});

export const TriggerStatusSchema = Type.Composite([
  TriggerSummarySchema,
  Type.Object({
    counters: TriggerCountersSchema,
    progress: Type.Object({ batches_planned: Count, batches_finished: Count, planning_done: Type.Boolean() }),
  }),
]);

export const TriggerListSchema = Type.Object({
  triggers: Type.Array(TriggerSummarySchema),
  next_cursor: Nullable(Type.String()),
});
