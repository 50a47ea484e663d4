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
const Setting = Type.Object(
  { enabled: Type.Boolean(), since: Type.Union([Type.String(), Type.Null()]) },
  { title: 'IdentityVerification', examples: [{ enabled: true, since: '2026-01-15T09:30:00.000Z' }] },
);
const Enabled = Type.Object(
  { enabled: Type.Literal(true), signing_key: Type.String() },
  { title: 'IdentityVerificationEnabled', examples: [{ enabled: true, signing_key: 'svc_ik_4fQy...' }] },
);
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
        operationId: 'getIdentityVerification',
        summary: 'Whether identity verification is on',
        description:
          'When it is on, public-key calls about a user (device registration, events) need an `X-Service-User-Token` your server signed for that user.',
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
        operationId: 'enableIdentityVerification',
        summary:
          'Turn identity verification on with a new signing key (shown only in this answer; replaces any previous key)',
        description:
          'Generates the signing key your server uses for `X-Service-User-Token`; it is shown only in this answer and replaces any previous key.',
        tags: ['identity'],
        security,
        response: { 200: Enabled, 401: ErrorBody },
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
        operationId: 'disableIdentityVerification',
        summary: 'Turn identity verification off (deletes the signing key)',
        description: 'Public-key calls no longer need a user token; the signing key is deleted.',
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
