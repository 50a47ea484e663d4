import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { identityCheck, type IdentityDeps } from '../identity/identity.http.js';
import { identityVerificationOn } from '../identity/identity.service.js';
import { PreferencesResponse, PutPreferencesBody } from './preferences.schemas.js';
import * as preferences from './preferences.service.js';

const config = { auth: 'client', rateLimitClass: 'management' } as const;
const security = [{ projectId: [], apiKey: [] }];
const tags = ['preferences'];
const ErrorBody = Type.Object({ error: Type.String() });
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };
const Params = Type.Object({ project_user_id: Type.String({ minLength: 1, maxLength: 255 }) });

export type PreferenceRouteDeps = IdentityDeps & preferences.PreferenceDeps;

const KEYS =
  "With the secret key, any user's; with the public key, the user's own only, and only when the project has identity verification on (X-Service-User-Token signed for the user; else 403).";

/** Users' subscription preferences (rule `subscription-topics`). */
export function registerPreferenceRoutes(fastify: FastifyInstance, deps: PreferenceRouteDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db } = deps;
  const verifyIdentity = identityCheck(deps);
  // The public key may touch preferences only when a user token proves whose they are: without
  // identity verification anyone holding the (public) key could unsubscribe anyone.
  const authorize = async (request: FastifyRequest, projectUserId: string) => {
    if (
      request.auth?.kind === 'public' &&
      !(await identityVerificationOn(db, request.auth.projectId, request.auth.identity))
    )
      throw new AppError(
        'forbidden',
        'IDENTITY_VERIFICATION_REQUIRED',
        'With the public key, preferences need identity verification on for the project; use the secret key or turn verification on',
      );
    await verifyIdentity(request, [projectUserId]);
  };

  app.get(
    '/api/v1/users/:project_user_id/preferences',
    {
      config,
      schema: {
        operationId: 'getUserPreferences',
        summary: "Get a user's subscription preferences",
        description: `Whether campaign pushes reach the user at all, and the user's state for every topic of the project (their choice, else the topic's default). ${KEYS}`,
        tags,
        security,
        params: Params,
        response: { 200: PreferencesResponse, ...errors },
      },
    },
    async (request) => {
      const projectUserId = request.params.project_user_id;
      await authorize(request, projectUserId);
      return preferences.preferencesToWire(
        await preferences.getPreferences(db, request.auth!.projectId, projectUserId),
      );
    },
  );

  app.put(
    '/api/v1/users/:project_user_id/preferences',
    {
      config,
      schema: {
        operationId: 'updateUserPreferences',
        summary: "Change a user's subscription preferences",
        description: `Merges the given choices: \`campaign_pushes\` (the global opt-out of campaign pushes) and some \`topics\` by key (topics not named keep their state; an unknown key is a 400). Answers the whole new state and sends a \`preferences.updated\` webhook event. ${KEYS}`,
        tags,
        security,
        params: Params,
        body: PutPreferencesBody,
        response: { 200: PreferencesResponse, ...errors },
      },
    },
    async (request) => {
      const projectUserId = request.params.project_user_id;
      await authorize(request, projectUserId);
      return preferences.preferencesToWire(
        await preferences.updatePreferences(deps, request.auth!.projectId, projectUserId, request.body),
      );
    },
  );
}
