import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import fs from 'node:fs';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { Dialect } from './db/dialect.js';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Clock } from './lib/clock.js';
import { writeBatcherFor, type WriteBatcher } from './db/write-batcher.js';
import { registerRestAuth } from './http/auth.js';
import { registerShutdownGate } from './http/shutdown-gate.js';
import { registerErrorHandler, sendError } from './http/error-handler.js';
import { createFrameworkErrorHandler, MAX_PATH_PARAM_LENGTH } from './http/framework-errors.js';
import { registerHealthRoutes } from './http/health.js';
import { registerInputGuard } from './http/input-guard.js';
import { registerJsonParser } from './http/json-body.js';
import { createMetrics, registerMetrics, type Metrics } from './http/metrics.js';
import { registerOpenApi } from './http/openapi.js';
import { registerRateLimitHook } from './http/rate-limit-hook.js';
import { requestIdFor } from './http/request-id.js';
import { CompactRequestLog } from './http/request-logging.js';
import { registerRequestTimeout } from './http/request-timeout.js';
import type { RateLimiter } from './rate-limit/rate-limiter.js';
import { registerUserRoutes } from './users/users.routes.js';
import { registerDeviceRoutes } from './devices/devices.routes.js';
import { registerEventRoutes } from './events/events.routes.js';
import type { PushRuntime } from './push/push-runtime.js';
import type { TemplateRenderer } from './campaigns/render-pool.js';
import { registerPushRoutes } from './push/push.routes.js';
import { registerPushCredentialRoutes } from './push/credentials/credentials.routes.js';
import { registerA2aRoutes } from './a2a/a2a.routes.js';
import { registerCampaignRoutes } from './campaigns/campaigns.routes.js';
import { registerTriggerRoutes } from './campaigns/trigger.routes.js';
import { registerIdentityRoutes } from './identity/identity.routes.js';
import { registerWebhookRoutes } from './webhooks/webhooks.routes.js';

/** Everything the transports need, passed explicitly (no global accessors). */
export interface AppDeps {
  config: Config;
  db: Kysely<Database>;
  dialect: Dialect;
  pgPool?: pg.Pool | undefined;
  logger: Logger;
  clock: Clock;
  rateLimiter: RateLimiter;
  metrics?: Metrics;
  /** Writes that may share a commit (group commit on SQLite); `buildApp` makes one when not given. */
  writes: WriteBatcher;
  /** Push delivery (connections, auth caches, quotas); the push routes answer 503 without it. */
  push?: PushRuntime | undefined;
  /** Campaign template rendering (dry runs), off the event loop. */
  templates: TemplateRenderer;
}

export type App = FastifyInstance;

/** Builds the HTTP application; it never listens (tests use `inject`, `main.ts` listens). */
export type AppOptions = Omit<AppDeps, 'writes'> & { writes?: WriteBatcher };

export async function buildApp(options: AppOptions): Promise<App> {
  const deps: AppDeps = { ...options, writes: options.writes ?? writeBatcherFor(options.db, options.dialect) };
  const { config } = deps;
  const frameworkErrors = createFrameworkErrorHandler();
  const app: FastifyInstance = Fastify({
    // pino's Logger is a FastifyBaseLogger; the cast keeps FastifyInstance's default generics.
    loggerInstance: deps.logger as FastifyBaseLogger,
    genReqId: requestIdFor,
    logController: new CompactRequestLog(),
    bodyLimit: config.bodyLimitBytes,
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    frameworkErrors: frameworkErrors.handle,
    // Herald answers requests that arrive during shutdown itself (http/shutdown-gate.ts).
    return503OnClosing: false,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false } },
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

  app.addHook('onRoute', frameworkErrors.onRoute);
  registerShutdownGate(app);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-ID', request.id);
  });
  registerRequestTimeout(app, config.requestTimeoutMs);
  registerJsonParser(app, config.bodyLimitBytes);
  registerInputGuard(app);
  registerErrorHandler(app);
  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, { status: 404, message: 'Not found', reason: 'ROUTE_NOT_FOUND' }),
  );
  registerRestAuth(app, deps.db);
  registerRateLimitHook(app, deps.rateLimiter);
  const metrics = deps.metrics ?? createMetrics();
  for (const metric of deps.push?.metrics ?? [])
    if (!metrics.registry.getSingleMetric((metric as unknown as { name: string }).name))
      metrics.registry.registerMetric(metric);
  registerMetrics(app, metrics);
  await registerOpenApi(app);

  registerHealthRoutes(app, deps.db);
  registerUserRoutes(app, deps);
  registerDeviceRoutes(app, deps);
  registerEventRoutes(app, deps);
  registerPushRoutes(app, deps);
  registerPushCredentialRoutes(app, deps);
  registerA2aRoutes(app, deps);
  registerCampaignRoutes(app, deps);
  registerTriggerRoutes(app, deps);
  registerIdentityRoutes(app, deps);
  registerWebhookRoutes(app, { ...deps, events: deps.push?.events });

  await app.ready();
  return app;
}
