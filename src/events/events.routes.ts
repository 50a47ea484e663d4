import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../lib/clock.js';
import { ProjectUserId } from '../users/users.schemas.js';
import { TrackEventsBody } from './events.schemas.js';
import * as events from './events.service.js';
import { identityCheck, type IdentityDeps } from '../identity/identity.http.js';

const security = [{ projectId: [], apiKey: [] }];
const ErrorBody = Type.Object({ error: Type.String() });
const TrackedEvent = Type.Object({
  event_id: Type.String(),
  project_user_id: Type.String(),
  name: Type.String(),
  timestamp: Type.String(),
});

export function registerEventRoutes(fastify: FastifyInstance, deps: IdentityDeps & { clock: Clock }): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const verifyIdentity = identityCheck(deps);

  app.post(
    '/api/v1/events',
    {
      config: { auth: 'client', rateLimitClass: 'management' },
      schema: {
        summary: 'Track one event, or a batch of up to 500 (public or secret key)',
        tags: ['events'],
        security,
        body: TrackEventsBody,
        response: {
          200: Type.Union([TrackedEvent, Type.Object({ events: Type.Array(TrackedEvent) })]),
          400: ErrorBody,
          401: ErrorBody,
        },
      },
    },
    async (request) => {
      const body = request.body;
      const batch = 'events' in body ? body.events : [body];
      await verifyIdentity(
        request,
        batch.map((e) => e.project_user_id),
      );
      const tracked = (await events.trackEvents(deps.db, deps.clock, request.auth!.projectId, batch)).map((e) => ({
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
        summary: "A user's most recent events (newest first)",
        tags: ['events'],
        security,
        params: Type.Object({ project_user_id: ProjectUserId }),
        querystring: Type.Object({ limit: Type.Optional(Type.String({ pattern: '^([1-9][0-9]{0,2}|1000)$' })) }),
        response: {
          200: Type.Object({
            events: Type.Array(
              Type.Object({
                event_id: Type.String(),
                name: Type.String(),
                properties: Type.Record(Type.String(), Type.Unknown()),
                timestamp: Type.String(),
              }),
            ),
          }),
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
