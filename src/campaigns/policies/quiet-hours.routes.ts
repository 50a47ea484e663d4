import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import { ProjectUserId } from '../../users/users.schemas.js';
import { errorResponses, security, tags } from '../analytics/campaign-insights.schemas.js';
import {
  getUserQuietHours,
  projectQuietHours,
  setProjectQuietHours,
  setUserQuietHours,
} from './quiet-hours-settings.service.js';

const config = { auth: 'secret', rateLimitClass: 'management' } as const;

const Window = Type.Union(
  [
    Type.Object(
      { start: Type.String({ description: 'HH:MM, inside' }), end: Type.String({ description: 'HH:MM, outside' }) },
      { additionalProperties: false },
    ),
    Type.Null(),
  ],
  { description: "A daily window in the user's time zone; null for none" },
);
const example = { quiet_hours: { start: '21:00', end: '08:00' } };
const QuietHoursBody = Type.Object(
  {
    quiet_hours: Type.Unknown({
      description:
        '{"start": "HH:MM", "end": "HH:MM"} (different times; end before start runs over midnight), or null to remove',
    }),
  },
  { additionalProperties: false, title: 'QuietHoursRequest', examples: [example, { quiet_hours: null }] },
);
const QuietHours = Type.Object({ quiet_hours: Window }, { title: 'QuietHours', examples: [example] });

/** Project default quiet hours and users' do-not-disturb windows (rule `quiet-hours`). */
export function registerQuietHoursRoutes(fastify: FastifyInstance, deps: { db: Db; clock: Clock }): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const project = {
    tags,
    security,
    response: { 200: QuietHours, ...errorResponses },
  };
  app.get(
    '/api/v1/settings/quiet-hours',
    {
      config,
      schema: {
        ...project,
        operationId: 'getQuietHours',
        summary: "The project's default quiet hours",
        description:
          "Campaigns whose `quiet_hours` is null keep this window, in each user's time zone; sends inside are held until it ends.",
      },
    },
    async (request) => ({ quiet_hours: await projectQuietHours(deps.db, request.auth!.projectId) }),
  );
  app.put(
    '/api/v1/settings/quiet-hours',
    {
      config,
      schema: {
        ...project,
        operationId: 'setQuietHours',
        summary: "Sets or removes the project's default quiet hours",
        description:
          'Applies to sends from now on, including held and running triggers of campaigns that follow the default.',
        body: QuietHoursBody,
      },
    },
    async (request) => ({
      quiet_hours: await setProjectQuietHours(deps.db, request.auth!.projectId, request.body.quiet_hours),
    }),
  );
  const user = { ...project, params: Type.Object({ project_user_id: ProjectUserId }) };
  app.get(
    '/api/v1/users/:project_user_id/quiet-hours',
    {
      config,
      schema: {
        ...user,
        operationId: 'getUserQuietHours',
        summary: "A user's do-not-disturb window",
        description: "Applies on top of every campaign's quiet hours, in the user's time zone.",
      },
    },
    async (request) => ({
      quiet_hours: await getUserQuietHours(deps.db, request.auth!.projectId, request.params.project_user_id),
    }),
  );
  app.put(
    '/api/v1/users/:project_user_id/quiet-hours',
    {
      config,
      schema: {
        ...user,
        operationId: 'setUserQuietHours',
        summary: "Sets or removes a user's do-not-disturb window",
        description:
          'Campaign sends inside it are held until it ends. Direct sends (`POST /api/v1/push`) are not held.',
        body: QuietHoursBody,
      },
    },
    async (request) => ({
      quiet_hours: await setUserQuietHours(
        deps.db,
        deps.clock,
        request.auth!.projectId,
        request.params.project_user_id,
        request.body.quiet_hours,
      ),
    }),
  );
}
