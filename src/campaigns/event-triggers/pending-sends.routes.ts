import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/database.js';
import { ProjectUserId } from '../../users/users.schemas.js';
import { errorResponses, security, tags } from '../analytics/campaign-insights.schemas.js';
import { ListQuery } from '../campaigns.schemas.js';
import { campaignPendingSends, userPendingSends } from './pending-sends.service.js';

const config = { auth: 'secret', rateLimitClass: 'management' } as const;

const State = Type.Union([Type.Literal('pending'), Type.Literal('fired'), Type.Literal('canceled')]);
const Query = Type.Composite([ListQuery, Type.Object({ state: Type.Optional(State) })]);
const example = {
  pending_send_id: '0b9f1c52-6c1e-4a53-9a8e-3f7c1d2e4a10',
  campaign_id: 'cart-reminder',
  project_user_id: 'user-42',
  event: {
    event_id: '5b1d6f0e-2f1a-4c3b-8d9e-7a6b5c4d3e2f',
    name: 'cart_abandoned',
    timestamp: '2026-01-15T09:30:00.000Z',
    properties: { items: 3 },
  },
  due_at: '2026-01-15T10:30:00.000Z',
  state: 'pending',
  reason: null,
  trigger_id: null,
  created_at: '2026-01-15T09:30:00.000Z',
  updated_at: '2026-01-15T09:30:00.000Z',
};
const PendingSend = Type.Object(
  {
    pending_send_id: Type.String(),
    campaign_id: Type.String(),
    project_user_id: Type.String(),
    event: Type.Object({
      event_id: Type.String(),
      name: Type.String(),
      timestamp: Type.String({ format: 'date-time' }),
      properties: Type.Record(Type.String(), Type.Unknown()),
    }),
    due_at: Type.String({ format: 'date-time' }),
    state: State,
    reason: Type.Union([Type.String(), Type.Null()], {
      description: 'Why it was canceled: cancel_event, campaign_not_active or campaign_changed',
    }),
    trigger_id: Type.Union([Type.String(), Type.Null()], {
      description: 'Once fired, the trigger that sends it (its status and ledger say what was sent or skipped)',
    }),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { title: 'PendingSend' },
);
const Count = Type.Integer({ minimum: 0 });
const CampaignPendingSends = Type.Object(
  {
    pending_sends: Type.Array(PendingSend),
    next_cursor: Type.Union([Type.String(), Type.Null()]),
    counts: Type.Object({ pending: Count, fired: Count, canceled: Count, sent: Count }),
  },
  {
    title: 'CampaignPendingSendList',
    examples: [{ pending_sends: [example], next_cursor: null, counts: { pending: 1, fired: 0, canceled: 0, sent: 0 } }],
  },
);
const UserPendingSends = Type.Object(
  { pending_sends: Type.Array(PendingSend), next_cursor: Type.Union([Type.String(), Type.Null()]) },
  { title: 'UserPendingSendList', examples: [{ pending_sends: [example], next_cursor: null }] },
);

/** Pending sends of event-triggered campaigns, per campaign and per user (rule `event-triggered-campaigns`). */
export function registerPendingSendRoutes(fastify: FastifyInstance, deps: { db: Db }): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/api/v1/campaigns/:campaign_id/pending-sends',
    {
      config,
      schema: {
        operationId: 'listCampaignPendingSends',
        summary: "An event-triggered campaign's pending sends, newest first, with counts",
        description:
          'Each matching event makes one pending send, due `delay` after it was received; `state` is pending, fired (its ' +
          '`trigger_id` sends it) or canceled (`reason`). `counts.sent` is the sends accepted by providers for the fired ones.',
        tags,
        security,
        params: Type.Object({ campaign_id: Type.String() }),
        querystring: Query,
        response: { 200: CampaignPendingSends, ...errorResponses },
      },
    },
    async (request) =>
      campaignPendingSends(deps.db, request.auth!.projectId, request.params.campaign_id, request.query),
  );
  app.get(
    '/api/v1/users/:project_user_id/pending-sends',
    {
      config,
      schema: {
        operationId: 'listUserPendingSends',
        summary: "A user's pending sends of event-triggered campaigns, newest first",
        description: "The pending sends the user's events made, in every campaign; `state` filters them.",
        tags,
        security,
        params: Type.Object({ project_user_id: ProjectUserId }),
        querystring: Query,
        response: { 200: UserPendingSends, ...errorResponses },
      },
    },
    async (request) =>
      userPendingSends(deps.db, request.auth!.projectId, request.params.project_user_id, request.query),
  );
}
