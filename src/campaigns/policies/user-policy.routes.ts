import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import { ProjectUserId } from '../../users/users.schemas.js';
import { errorResponses, security, tags } from '../analytics/campaign-insights.schemas.js';
import { ListQuery } from '../campaigns.schemas.js';
import { CapRuleSchema } from './frequency-caps.js';
import { userCapCounters, userHeldSends } from './user-policy.service.js';

const config = { auth: 'secret', rateLimitClass: 'management' } as const;
const params = Type.Object({ project_user_id: ProjectUserId });
const Time = Type.String({ format: 'date-time' });
const State = Type.Union([Type.Literal('held'), Type.Literal('fired'), Type.Literal('canceled')]);

const heldExample = {
  held_send_id: '0b9f1c52-6c1e-4a53-9a8e-3f7c1d2e4a10',
  campaign_id: 'weekly-digest',
  source_trigger_id: '5b1d6f0e-2f1a-4c3b-8d9e-7a6b5c4d3e2f',
  due_at: '2026-01-16T08:00:00.000Z',
  state: 'held',
  reason: null,
  trigger_id: null,
  created_at: '2026-01-15T22:10:00.000Z',
};
const HeldSends = Type.Object(
  {
    held_sends: Type.Array(
      Type.Object({
        held_send_id: Type.String(),
        campaign_id: Type.String(),
        source_trigger_id: Type.String({ description: 'The trigger whose send fell inside quiet hours' }),
        due_at: Type.String({ format: 'date-time', description: 'When the quiet hours end and it goes out' }),
        state: State,
        reason: Type.Union([Type.String(), Type.Null()], { description: 'Why it was canceled' }),
        trigger_id: Type.Union([Type.String(), Type.Null()], {
          description: 'Once fired, the trigger that sent it (its status says what was sent or skipped)',
        }),
        created_at: Time,
      }),
    ),
  },
  { title: 'UserHeldSendList', examples: [{ held_sends: [heldExample] }] },
);
const HeldQuery = Type.Object({
  state: Type.Optional(State),
  limit: ListQuery.properties.limit,
});

const CapCounters = Type.Object(
  {
    project_user_id: Type.String(),
    time_zone: Type.String({ description: "The user's zone: the zone property when valid, else the default zone" }),
    evaluated_at: Time,
    rules: Type.Array(
      Type.Object({
        max: CapRuleSchema.properties.max,
        per: CapRuleSchema.properties.per,
        tag: Type.Union([Type.String(), Type.Null()]),
        used: Type.Integer({ minimum: 0, description: 'Counted sends (of the tag) in the current window' }),
        window_start: Time,
        window_end: Type.String({
          format: 'date-time',
          description: "Calendar windows: the user's next midnight or Monday; rolling windows: now",
        }),
      }),
    ),
  },
  {
    title: 'UserFrequencyCaps',
    examples: [
      {
        project_user_id: 'user-42',
        time_zone: 'Europe/Paris',
        evaluated_at: '2026-01-15T09:30:00.000Z',
        rules: [
          {
            max: 3,
            per: 'day',
            tag: null,
            used: 2,
            window_start: '2026-01-14T23:00:00.000Z',
            window_end: '2026-01-15T23:00:00.000Z',
          },
          {
            max: 1,
            per: { hours: 4 },
            tag: 'promo',
            used: 0,
            window_start: '2026-01-15T05:30:00.000Z',
            window_end: '2026-01-15T09:30:00.000Z',
          },
        ],
      },
    ],
  },
);

/** What the policies hold for one user: held sends (rule `quiet-hours`) and cap counters (rule `frequency-caps`). */
export function registerUserPolicyRoutes(fastify: FastifyInstance, deps: { db: Db; clock: Clock }): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/api/v1/users/:project_user_id/held-sends',
    {
      config,
      schema: {
        operationId: 'listUserHeldSends',
        summary: "A user's sends held by quiet hours",
        description:
          'Sends still held come first (soonest due first), then those that went out or were canceled, latest first.',
        tags,
        security,
        params,
        querystring: HeldQuery,
        response: { 200: HeldSends, ...errorResponses },
      },
    },
    async (request) =>
      userHeldSends(deps.db, request.auth!.projectId, request.params.project_user_id, {
        state: request.query.state,
        limit: Number(request.query.limit ?? 50),
      }),
  );
  app.get(
    '/api/v1/users/:project_user_id/frequency-caps',
    {
      config,
      schema: {
        operationId: 'getUserFrequencyCaps',
        summary: "Where the project's frequency caps stand for a user",
        description:
          "For each project rule: its `max`, `per` and `tag`, the counted sends in the current window (`used`) and the window's bounds in the user's time zone. A user at `used >= max` is skipped with `FREQUENCY_CAPPED` by campaigns that respect the caps.",
        tags,
        security,
        params,
        response: { 200: CapCounters, ...errorResponses },
      },
    },
    async (request) => userCapCounters(deps.db, deps.clock, request.auth!.projectId, request.params.project_user_id),
  );
}
