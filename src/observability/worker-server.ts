import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import { registerHealthRoutes } from '../http/health.js';
import { registerMetrics, type Metrics } from '../http/metrics.js';
import { CompactRequestLog } from '../http/request-logging.js';

/**
 * The worker role's own small HTTP server (`WORKER_METRICS_PORT`): `/healthz`, `/readyz` (database
 * reachable and migrated) and `/metrics`, no authentication, like the API's. Nothing else is served.
 */
export async function startWorkerServer(options: {
  db: Db;
  metrics: Metrics;
  logger: Logger;
  host: string;
  port: number;
}): Promise<FastifyInstance> {
  const loggerInstance: FastifyBaseLogger = options.logger.child({ server: 'worker' });
  const app = Fastify({
    loggerInstance,
    logController: new CompactRequestLog(),
    return503OnClosing: true,
  });
  registerMetrics(app, options.metrics);
  registerHealthRoutes(app, options.db);
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'Not found' }));
  await app.listen({ host: options.host, port: options.port });
  return app;
}
