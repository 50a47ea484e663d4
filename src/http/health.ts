import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/database.js';
import { hasPendingMigrations } from '../db/migrate.js';

/** Rule `health-endpoints`: liveness, readiness (database reachable and migrated) and nothing else; no authentication. */
export function registerHealthRoutes(app: FastifyInstance, db: Db): void {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    try {
      await sql`select 1`.execute(db);
      if (await hasPendingMigrations(db))
        return reply.code(503).header('Retry-After', '5').send({ status: 'migrations pending' });
      return { status: 'ready' };
    } catch (error) {
      request.log.warn({ err: error }, 'readiness check failed');
      return reply.code(503).header('Retry-After', '5').send({ status: 'database unavailable' });
    }
  });
}
