import fs from 'node:fs';
import swagger from '@fastify/swagger';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { HERALD_VERSION } from '../lib/package-info.js';
import { registerDocsUi } from './docs-ui.js';
import { hoistNamedSchemas } from './openapi-components.js';
import {
  documentedResponses,
  forSwaggerFormatter,
  openApiPath,
  SECURITY_SCHEMES,
  securityFor,
} from './openapi-operations.js';

const A2A_GUIDE = new URL('../../docs/a2a.md', import.meta.url);

const TAGS = [
  { name: 'users', description: 'Your users and their free-form properties.' },
  { name: 'devices', description: "Users' push targets: FCM and APNs tokens, Web Push subscriptions." },
  { name: 'events', description: 'What users do; events start and qualify campaigns.' },
  { name: 'push', description: 'Sending push notifications, and the provider credentials they use.' },
  { name: 'campaigns', description: 'Templated messages to segments, started by the API or by events.' },
  { name: 'topics', description: 'Subscription topics campaigns name and users subscribe to.' },
  {
    name: 'preferences',
    description: "Users' subscription preferences, and signed links to a page where they change them.",
  },
  { name: 'identity', description: 'Identity verification of public-key calls about a user.' },
  { name: 'project', description: 'The project the key belongs to.' },
  {
    name: 'webhooks',
    description: 'Notices of sends and triggers POSTed to your endpoints, signed (Standard Webhooks).',
  },
];

const DESCRIPTION = [
  'Self-hostable engagement backend: users, devices, events, push, campaigns and delivery webhooks.',
  '',
  'Authenticate with `X-Service-Project-ID` and one of the project keys in `X-Service-API-Key`: the **secret key** ' +
    'for every operation (servers only), the **public key** for the client operations (devices, events, the VAPID ' +
    'public key) that apps and browsers call. Mutations accept an `Idempotency-Key` header; a retry with the same ' +
    'key answers the first response. `429` and `503` answers carry `Retry-After`.',
  '',
  "On PostgreSQL, lists, analytics and dry runs run under the operator's statement timeouts " +
    '(`DATABASE_READ_TIMEOUT_MS`, `DATABASE_DRY_RUN_TIMEOUT_MS`; on SQLite, dry runs under the second): a read stopped by one answers `422` with ' +
    '`X-Error-Reason: QUERY_TIMEOUT` and no `Retry-After` (ask for less: a smaller page, a narrower segment).',
  '',
  'Agents use the A2A JSON-RPC interface at `/a2a` (agent card: `/.well-known/agent-card.json`), described in ' +
    '[docs/a2a.md](/docs/a2a.md).',
].join('\n');

/** OpenAPI 3.1 generated from the route schemas, at `/openapi.json`, rendered with Scalar at `/docs`. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Herald', version: HERALD_VERSION, description: DESCRIPTION },
      externalDocs: { description: 'The A2A agent interface', url: '/docs/a2a.md' },
      servers: [{ url: '/', description: 'This Herald' }],
      tags: TAGS,
      components: { securitySchemes: SECURITY_SCHEMES },
    },
    // The document shows each route as it is served: its public path, security and error answers.
    transform: ({ schema, url, route }) => {
      const config = route.config ?? {};
      const documented: FastifySchema = {
        ...schema,
        security: securityFor(config.auth),
        response: documentedResponses(schema ?? {}, config),
      };
      return { schema: documented, url: forSwaggerFormatter(openApiPath(url)) };
    },
    transformObject: (documents) => ('openapiObject' in documents ? hoistNamedSchemas(documents.openapiObject) : {}),
    // Shared schemas (`addSchema` with an `$id`) appear under their own names in components.schemas.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });
  registerDocsUi(app, { documentUrl: '/openapi.json', title: 'Herald API', version: HERALD_VERSION });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  app.get('/docs/a2a.md', { schema: { hide: true } }, async (_request, reply) => {
    const guide = await fs.promises.readFile(A2A_GUIDE, 'utf8');
    return reply.type('text/markdown; charset=utf-8').send(guide);
  });
}
