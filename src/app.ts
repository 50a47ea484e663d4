import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import fs from 'node:fs';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Db } from './db/database.js';
import { registerRestAuth } from './http/auth.js';
import { registerClientCors } from './http/client-cors.js';
import { registerConsole } from './http/console.js';
import { registerShutdownGate } from './http/shutdown-gate.js';
import { registerErrorHandler, sendError } from './http/error-handler.js';
import { createFrameworkErrorHandler, MAX_PATH_PARAM_LENGTH } from './http/framework-errors.js';
import { registerHealthRoutes } from './http/health.js';
import { registerInputGuard } from './http/input-guard.js';
import { registerJsonParser } from './http/json-body.js';
import {
  registerMetricsNotServed,
  registerMetricsRoute,
  registerRequestMetrics,
  type Metrics,
} from './http/metrics.js';
import { registerOpenApi } from './http/openapi.js';
import { registerRateLimitHook } from './http/rate-limit-hook.js';
import { requestIdFor } from './http/request-id.js';
import { CompactRequestLog } from './http/request-logging.js';
import { registerRequestTimeout } from './http/request-timeout.js';
import { refuseUnescapedVerbs } from './http/route-paths.js';
import type { RateLimiter } from './rate-limit/rate-limiter.js';
import { AJV_OPTIONS } from './lib/schema-validator.js';

/** What the HTTP plumbing needs; each feature's routes come with their own dependencies through `routes`. */
export interface HttpDeps {
  config: Pick<
    Config,
    | 'bodyLimitBytes'
    | 'requestTimeoutMs'
    | 'tlsCertFile'
    | 'tlsKeyFile'
    | 'corsOrigins'
    | 'metricsToken'
    | 'metricsPort'
  >;
  /** Authentication and readiness. */
  db: Db;
  logger: Logger;
  rateLimiter: RateLimiter;
  metrics: Metrics;
  /** Registers the feature routes (the composition root, src/herald.ts, gives each its dependencies). */
  routes(app: FastifyInstance): void;
}

export type App = FastifyInstance;

/** Builds the HTTP application; it never listens (tests use `inject`, src/runtime.ts listens). */
export async function buildApp(deps: HttpDeps): Promise<App> {
  const { config } = deps;
  const frameworkErrors = createFrameworkErrorHandler();
  // Typed as Fastify's base logger, so the app keeps FastifyInstance's default generics.
  const loggerInstance: FastifyBaseLogger = deps.logger;
  const app: FastifyInstance = Fastify({
    loggerInstance,
    genReqId: requestIdFor,
    logController: new CompactRequestLog(),
    bodyLimit: config.bodyLimitBytes,
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    frameworkErrors: frameworkErrors.handle,
    // Herald answers requests that arrive during shutdown itself (http/shutdown-gate.ts).
    return503OnClosing: false,
    ajv: AJV_OPTIONS,
    ...(config.tlsCertFile && config.tlsKeyFile
      ? {
          https: {
            cert: fs.readFileSync(config.tlsCertFile),
            key: fs.readFileSync(config.tlsKeyFile),
            minVersion: 'TLSv1.2' as const,
          },
        }
      : {}),
  });

  app.addHook('onRoute', refuseUnescapedVerbs);
  app.addHook('onRoute', frameworkErrors.onRoute);
  registerShutdownGate(app);
  // Callback-style hooks where there is nothing to await: no promise per request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-ID', request.id);
    done();
  });
  registerRequestTimeout(app, config.requestTimeoutMs);
  registerJsonParser(app, config.bodyLimitBytes);
  registerInputGuard(app);
  registerErrorHandler(app);
  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, { status: 404, message: 'Not found', reason: 'ROUTE_NOT_FOUND' }),
  );
  registerClientCors(app, config.corsOrigins);
  registerRestAuth(app, deps.db);
  registerRateLimitHook(app, deps.rateLimiter);
  registerRequestMetrics(app, deps.metrics);
  // `/metrics` here behind the bearer token; on its own port when METRICS_PORT is set (src/runtime.ts).
  if (config.metricsPort === undefined) {
    if (config.metricsToken === undefined) registerMetricsNotServed(app);
    else registerMetricsRoute(app, deps.metrics, config.metricsToken);
  }
  await registerOpenApi(app);

  registerHealthRoutes(app, deps.db);
  registerConsole(app);
  deps.routes(app);

  await app.ready();
  return app;
}
