import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

/** OpenAPI 3.1 generated from the route schemas, at `/openapi.json`, rendered at `/docs`. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Herald',
        version: '1.0.0',
        description: 'Self-hostable engagement backend: users, devices, events, push and campaigns.',
      },
      components: {
        securitySchemes: {
          projectId: { type: 'apiKey', in: 'header', name: 'X-Service-Project-ID' },
          apiKey: { type: 'apiKey', in: 'header', name: 'X-Service-API-Key' },
        },
      },
      security: [{ projectId: [], apiKey: [] }],
    },
    // Shared schemas (`addSchema` with an `$id`) appear under their own names in components.schemas.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
