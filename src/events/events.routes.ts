import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { WriteCommitter } from '../db/group-commit.js';
import type { Clock } from '../lib/clock.js';
import { ProjectUserId } from '../users/users.schemas.js';
import { TrackEventsBody } from './events.schemas.js';
import * as events from './events.service.js';
import { identityCheck, type IdentityDeps } from '../identity/identity.http.js';

const security = [{ projectId: [], apiKey: [] }];
const ErrorBody = Type.Object({ error: Type.String() });
const trackedExample = {
  event_id: 'evt_5f2c9a',
  project_user_id: 'user-42',
  name: 'order_completed',
  timestamp: '2026-01-15T09:30:00.000Z',
};
const TrackedEvent = Type.Object(
  { event_id: Type.String(), project_user_id: Type.String(), name: Type.String(), timestamp: Type.String() },
  { title: 'TrackedEvent' },
);
const TrackEventsResponse = Type.Union([TrackedEvent, Type.Object({ events: Type.Array(TrackedEvent) })], {
  title: 'TrackEventsResponse',
  examples: [trackedExample],
});
const UserEvents = Type.Object(
  {
    events: Type.Array(
      Type.Object({
        event_id: Type.String(),
        name: Type.String(),
        properties: Type.Record(Type.String(), Type.Unknown()),
        timestamp: Type.String(),
      }),
    ),
  },
  {
    title: 'UserEventList',
    examples: [
      {
        events: [
          {
            event_id: 'evt_5f2c9a',
            name: 'order_completed',
            properties: { total: 42.5, currency: 'EUR' },
            timestamp: '2026-01-15T09:30:00.000Z',
          },
        ],
      },
    ],
  },
);

export interface EventRouteDeps extends IdentityDeps {
  clock: Clock;
  /** Events share commits on the embedded database. */
  writes: WriteCommitter;
  /** Event-triggered campaigns: runs in the transaction that stores the events. */
  observeEvents?: events.EventObserver;
}

export function registerEventRoutes(fastify: FastifyInstance, deps: EventRouteDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const verifyIdentity = identityCheck(deps);

  app.post(
    '/api/v1/events',
    {
      config: { auth: 'client', rateLimitClass: 'management' },
      schema: {
        operationId: 'trackEvents',
        summary: 'Track one event, or a list of up to 500 (public or secret key)',
        description:
          'Stores one event (the body is the event) or a list (`{"events": [...]}`, answered `{"events": [...]}`). Events feed event-triggered campaigns and campaign conditions; with identity verification on, the public key needs X-Service-User-Token for each user.',
        tags: ['events'],
        security,
        body: TrackEventsBody,
        response: {
          200: TrackEventsResponse,
          400: ErrorBody,
          401: ErrorBody,
        },
      },
    },
    async (request) => {
      const body = request.body;
      const list = 'events' in body ? body.events : [body];
      await verifyIdentity(
        request,
        list.map((e) => e.project_user_id),
      );
      // Checked before the work joins a shared commit, so a bad event never rolls back the others'.
      const stored = await deps.writes.run(
        events.eventsToStore(deps.clock, request.auth!.projectId, list, deps.observeEvents),
      );
      const tracked = stored.map((e) => ({
        event_id: e.eventId,
        project_user_id: e.projectUserId,
        name: e.name,
        timestamp: new Date(e.timestamp).toISOString(),
      }));
      return 'events' in body ? { events: tracked } : tracked[0];
    },
  );

  app.get(
    '/api/v1/users/:project_user_id/events',
    {
      config: { auth: 'secret', rateLimitClass: 'management' },
      schema: {
        operationId: 'listUserEvents',
        summary: "A user's most recent events (newest first)",
        description: "Up to `limit` (default 100, at most 1000) of the user's events, newest first.",
        tags: ['events'],
        security,
        params: Type.Object({ project_user_id: ProjectUserId }),
        querystring: Type.Object({ limit: Type.Optional(Type.String({ pattern: '^([1-9][0-9]{0,2}|1000)$' })) }),
        response: {
          200: UserEvents,
          400: ErrorBody,
          404: ErrorBody,
          401: ErrorBody,
        },
      },
    },
    async (request) => {
      const limit = request.query.limit === undefined ? 100 : Number(request.query.limit);
      const found = await events.listUserEvents(
        deps.db,
        deps.clock,
        request.auth!.projectId,
        request.params.project_user_id,
        limit,
      );
      return {
        events: found.map((e) => ({
          event_id: e.id,
          name: e.name,
          properties: e.properties,
          timestamp: new Date(e.timestamp).toISOString(),
        })),
      };
    },
  );
}
