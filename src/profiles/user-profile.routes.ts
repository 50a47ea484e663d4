import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import { invalid } from '../errors.js';
import { UserParams, isValidProjectUserId } from '../users/users.schemas.js';
import { UserDetail } from './user-profile.schemas.js';
import { getUserProfile, userProfileToWire } from './user-profile.service.js';

const config = { auth: 'secret', rateLimitClass: 'management' } as const;
const security = [{ projectId: [], apiKey: [] }];
const tags = ['users'];
const ErrorBody = Type.Object({ error: Type.String() });
const errorResponses = { 400: ErrorBody, 401: ErrorBody };

export interface UserProfileRouteDeps {
  db: Db;
  clock: Clock;
}

/** `GET /api/v1/users/{id}`: the user profile, JSON `{"error"}` for every failure. */
export function registerUserProfileRoutes(fastify: FastifyInstance, deps: UserProfileRouteDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, clock } = deps;

  app.get(
    '/api/v1/users/:project_user_id',
    {
      config,
      schema: {
        operationId: 'getUser',
        summary: 'Get a user with its devices and recent events',
        description:
          'The stored properties and timestamps, the devices (never their push tokens, endpoints or keys) and the latest 20 events, newest first. 404 when the project has no such user.',
        tags,
        security,
        params: UserParams,
        response: { 200: UserDetail, ...errorResponses, 404: ErrorBody },
      },
    },
    async (request) => {
      const projectUserId = request.params.project_user_id;
      if (!isValidProjectUserId(projectUserId))
        throw invalid(
          'INVALID_PROJECT_USER_ID',
          'project_user_id must be 1 to 255 characters without control characters',
        );
      return userProfileToWire(await getUserProfile(db, clock, request.auth!.projectId, projectUserId));
    },
  );
}
