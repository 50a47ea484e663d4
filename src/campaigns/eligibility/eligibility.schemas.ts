import { Type } from '@sinclair/typebox';
import { GATES, type GateName } from './eligibility-gates.js';

/** The eligibility explanation's query and answer (REST; the A2A `explain-delivery` skill answers the same in camelCase). */

export const EligibilityQuery = Type.Object({
  project_user_id: Type.String({ description: 'The user to explain', examples: ['user-42'] }),
  trigger_id: Type.Optional(
    Type.String({
      description:
        "A trigger of the campaign: its segment, audience conditions, topic and policy as it stored them. Without it, the campaign's as they stand and no audience conditions",
    }),
  ),
});

const Gate = Type.Object({
  gate: Type.Unsafe<GateName>({
    type: 'string',
    enum: [...GATES],
    description: `The gate; the list is in this order: ${GATES.join(', ')}`,
  }),
  verdict: Type.Union(
    [Type.Literal('pass'), Type.Literal('fail'), Type.Literal('hold'), Type.Literal('not_applicable')],
    { description: '`hold`: the send would wait (quiet hours, the rate limit), not be dropped' },
  ),
  reason: Type.Union([Type.String(), Type.Null()], {
    description:
      "On `fail`, the skip reason the trigger records (its counters' `skipped` key, upper-cased): NOT_IN_SEGMENT, AUDIENCE_CONDITIONS, NO_DEVICE, UNSUBSCRIBED, NOT_REELIGIBLE, FREQUENCY_CAPPED; else null",
  }),
  summary: Type.String({ description: 'One readable sentence' }),
  data: Type.Record(Type.String(), Type.Unknown(), { description: 'What the gate read and computed' }),
});

const EXAMPLE = {
  campaign_id: 'weekly-digest',
  project_user_id: 'user-42',
  eligible: false,
  evaluated_at: '2026-11-28T20:45:00.000Z',
  gates: [
    {
      gate: 'segment',
      verdict: 'pass',
      reason: null,
      summary: "The user matches the campaign's segment.",
      data: { condition: { property: 'plan', op: 'eq', value: 'pro' }, user_properties: { plan: 'pro' }, events: [] },
    },
    {
      gate: 'audience',
      verdict: 'not_applicable',
      reason: null,
      summary: 'No audience conditions apply: they belong to a trigger (pass trigger_id to check one).',
      data: { condition: null },
    },
    {
      gate: 'devices',
      verdict: 'pass',
      reason: null,
      summary: 'The user has 2 active device(s).',
      data: { active_devices: 2, by_provider: { fcm: 1, apns: 1 } },
    },
    {
      gate: 'topic',
      verdict: 'pass',
      reason: null,
      summary: 'The user is subscribed to the topic "digest".',
      data: { topic: 'digest', default_subscribed: true, user_choice: null, state: 'subscribed' },
    },
    {
      gate: 'global_opt_out',
      verdict: 'pass',
      reason: null,
      summary: 'The user has not opted out of campaign pushes.',
      data: { campaign_pushes: 'subscribed', updated_at: null },
    },
    {
      gate: 'reeligibility',
      verdict: 'not_applicable',
      reason: null,
      summary: 'The campaign may reach a user any number of times.',
      data: { mode: 'always' },
    },
    {
      gate: 'frequency_caps',
      verdict: 'fail',
      reason: 'FREQUENCY_CAPPED',
      summary: 'The user is at a frequency cap (1 rule(s) reached).',
      data: {
        time_zone: 'Europe/Paris',
        tags: [],
        rules: [{ max: 3, per: 'day', window_start: '2026-11-27T23:00:00.000Z', count: 3, reached: true }],
      },
    },
    {
      gate: 'quiet_hours',
      verdict: 'hold',
      reason: null,
      summary:
        'It is 21:45 for the user (Europe/Paris), inside quiet hours: the send would be held until 2026-11-29T07:00:00.000Z.',
      data: {
        campaign_window: { start: '21:00', end: '08:00' },
        user_window: null,
        time_zone: 'Europe/Paris',
        local_time: '21:45',
        held_until: '2026-11-29T07:00:00.000Z',
      },
    },
    {
      gate: 'rate_limit',
      verdict: 'pass',
      reason: null,
      summary: 'The campaign is under its 6000 sends per minute: a send may go now.',
      data: { max_sends_per_minute: 6000, wait_ms: 0, next_send_at: '2026-11-28T20:45:00.000Z' },
    },
  ],
};

export const EligibilityResponse = Type.Object(
  {
    campaign_id: Type.String(),
    project_user_id: Type.String(),
    eligible: Type.Boolean({ description: 'No gate fails (a `hold` delays the send, it does not stop it)' }),
    evaluated_at: Type.String({ format: 'date-time' }),
    gates: Type.Array(Gate, { description: 'Every gate, each evaluated whatever the others say' }),
  },
  { title: 'CampaignEligibility', examples: [EXAMPLE] },
);
