import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../lib/clock.js';
import type { IdentityDeps } from './identity.http.js';
import {
  disableIdentityVerification,
  enableIdentityVerification,
  showIdentityVerification,
} from './identity.service.js';

const security = [{ projectId: [], apiKey: [] }];
const ErrorBody = Type.Object({ error: Type.String() });
const Setting = Type.Object({ enabled: Type.Boolean(), since: Type.Union([Type.String(), Type.Null()]) });
const URL = '/api/v1/identity-verification';
const config = { auth: 'secret', rateLimitClass: 'management' } as const;

/** Identity verification of public-key calls (docs/security.md), managed with the secret key. */
export function registerIdentityRoutes(fastify: FastifyInstance, deps: IdentityDeps & { clock: Clock }): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    URL,
    {
      config,
      schema: {
        summary: 'Whether identity verification is on',
        tags: ['identity'],
        security,
        response: { 200: Setting, 401: ErrorBody },
      },
    },
    async (request) => showIdentityVerification(deps.db, request.auth!.projectId),
  );

  app.put(
    URL,
    {
      config,
      schema: {
        summary:
          'Turn identity verification on with a new signing key (shown only in this answer; replaces any previous key)',
        tags: ['identity'],
        security,
        response: { 200: Type.Object({ enabled: Type.Literal(true), signing_key: Type.String() }), 401: ErrorBody },
      },
    },
    async (request) => ({
      enabled: true as const,
      signing_key: (await enableIdentityVerification(deps.db, deps.secretBox(), deps.clock, request.auth!.projectId))
        .signingKey,
    }),
  );

  app.delete(
    URL,
    {
      config,
      schema: {
        summary: 'Turn identity verification off (deletes the signing key)',
        tags: ['identity'],
        security,
        response: { 200: Setting, 401: ErrorBody },
      },
    },
    async (request) => {
      await disableIdentityVerification(deps.db, request.auth!.projectId);
      return { enabled: false, since: null };
    },
  );
}
