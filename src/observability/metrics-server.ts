import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import { registerHealthRoutes } from '../http/health.js';
import { registerMetricsRoute, registerRequestMetrics, type Metrics } from '../http/metrics.js';
import { CompactRequestLog } from '../http/request-logging.js';

/**
 * A small HTTP server of its own for probes and scrapes: `/healthz`, `/readyz` (database reachable
 * and migrated) and `/metrics`, nothing else. The worker role always has one (`WORKER_METRICS_PORT`);
 * the API role has one when `METRICS_PORT` is set. `/metrics` needs the bearer token when
 * `METRICS_TOKEN` is set; without it, the port itself is the boundary (keep it off the public network).
 */
export async function startMetricsServer(options: {
  /** Names the server in its log lines: `worker` or `metrics`. */
  name: string;
  db: Db;
  metrics: Metrics;
  metricsToken: string | undefined;
  logger: Logger;
  host: string;
  port: number;
}): Promise<FastifyInstance> {
  const loggerInstance: FastifyBaseLogger = options.logger.child({ server: options.name });
  const app = Fastify({
    loggerInstance,
    logController: new CompactRequestLog(),
    return503OnClosing: true,
  });
  registerRequestMetrics(app, options.metrics);
  registerMetricsRoute(app, options.metrics, options.metricsToken);
  registerHealthRoutes(app, options.db);
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'Not found' }));
  await app.listen({ host: options.host, port: options.port });
  return app;
}
