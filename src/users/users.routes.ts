import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.js';
import type { WriteCommitter } from '../db/group-commit.js';
import type { Clock } from '../lib/clock.js';
import { invalid } from '../errors.js';
import { replyIdempotently } from '../idempotency/idempotency.http.js';
import {
  CreateUserBody,
  PatchUserBody,
  PropertiesResponse,
  UserParams,
  isValidProjectUserId,
} from './users.schemas.js';
import * as users from './users.service.js';
import type { UserUpserts } from './user-upserts.js';
import { registerUserIoRoutes } from './users-io.routes.js';
import type { ImportPreferences } from './users-import.service.js';

const MISSING_ID = 'Project User Id must be provided';
const routeConfig = { auth: 'secret', rateLimitClass: 'management', plainText400: MISSING_ID } as const;
const security = [{ projectId: [], apiKey: [] }];
const errorResponses = {
  400: Type.String({ description: `text/plain: ${MISSING_ID}` }),
  401: Type.Object({ error: Type.String() }),
};

function pathUserId(params: { project_user_id: string }): string {
  if (!isValidProjectUserId(params.project_user_id)) throw invalid('INVALID_PROJECT_USER_ID', MISSING_ID);
  return params.project_user_id;
}

export interface UserRouteDeps {
  db: Kysely<Database>;
  /** A replica or `db`, for the user list (users-io.routes.ts). */
  readDb: Kysely<Database>;
  clock: Clock;
  /** Writes that may share a commit (the user import, users-io.routes.ts). */
  writes: WriteCommitter;
  /** Creates and merges of single users: they share commits on SQLite, statements under load on PostgreSQL. */
  userUpserts: UserUpserts;
  /** The preferences part of imported lines (users-io.routes.ts). */
  preferences: ImportPreferences;
}

export function registerUserRoutes(fastify: FastifyInstance, deps: UserRouteDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, clock } = deps;
  registerUserIoRoutes(fastify, deps);

  app.post(
    '/api/v1/users',
    {
      config: routeConfig,
      schema: {
        operationId: 'upsertUser',
        summary: 'Create a user, or merge properties into an existing one',
        description:
          "Creates the user if `project_user_id` is new, else merges `properties` into the stored ones (a key set to `null` is kept as null). Answers all of the user's properties. An `Idempotency-Key` header makes a retry answer the first response.",
        tags: ['users'],
        security,
        body: CreateUserBody,
        response: { 200: PropertiesResponse, ...errorResponses },
      },
    },
    async (request, reply) => {
      const body = request.body;
      return replyIdempotently(deps, request, reply, 'create-user', async () => {
        // One statement, or a share of one (user-upserts.ts): never a BEGIN/COMMIT of its own.
        const user = await users.upsertUserThrough(
          deps.userUpserts,
          clock,
          request.auth!.projectId,
          body.project_user_id,
          body.properties,
        );
        return { status: 200, body: { properties: user.properties } };
      });
    },
  );

  app.patch(
    '/api/v1/users/:project_user_id',
    {
      config: routeConfig,
      // An absent body is an empty update (it still answers 404 for an unknown user); a JSON `null` is not.
      preValidation: async (request) => {
        if (request.body === undefined) request.body = {};
      },
      schema: {
        operationId: 'updateUser',
        summary: 'Update some properties of a user',
        description:
          'Merges `properties` into an existing user and answers all of its properties; an unknown user is a 404 with an empty body.',
        tags: ['users'],
        security,
        params: UserParams,
        body: PatchUserBody,
        response: {
          200: PropertiesResponse,
          404: Type.Null({ description: 'No such user (empty body, `X-Error-Reason: USER_NOT_FOUND`).' }),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const projectUserId = pathUserId(request.params);
      const body = request.body;
      try {
        return {
          properties: await users.patchUser(db, clock, request.auth!.projectId, projectUserId, body.properties),
        };
      } catch (error) {
        // PATCH's 404 has an empty body (rule `patch-response`).
        if (error instanceof Error && 'code' in error && error.code === 'USER_NOT_FOUND')
          return reply.code(404).header('X-Error-Reason', 'USER_NOT_FOUND').send('');
        throw error;
      }
    },
  );

  app.delete(
    '/api/v1/users/:project_user_id',
    {
      config: routeConfig,
      schema: {
        operationId: 'deleteUser',
        summary: 'Delete a user permanently, with its devices and events',
        description:
          'Deletes the user, its devices and its events for good. Deleting a user that does not exist also answers 200, so a retry is safe.',
        tags: ['users'],
        security,
        params: UserParams,
        response: { 200: Type.Object({}), ...errorResponses },
      },
    },
    async (request) => {
      await users.deleteUser(db, request.auth!.projectId, pathUserId(request.params));
      return {};
    },
  );

  // An empty path id is "missing" (rule `user-id`), not an unknown route.
  for (const url of ['/api/v1/users/', '/api/v1/users']) {
    app.route({
      method: ['PATCH', 'DELETE'],
      url,
      config: routeConfig,
      schema: { hide: true },
      handler: async () => {
        throw invalid('MISSING_PROJECT_USER_ID', MISSING_ID);
      },
    });
  }
}
