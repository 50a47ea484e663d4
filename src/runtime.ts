import path from 'node:path';
import type { Logger } from 'pino';
import { buildApp, type App } from './app.js';
import type { Config } from './config.js';
import { openDatabase, type DatabaseHandle } from './db/connect.js';
import { migrateToLatest } from './db/migrate.js';
import { deleteExpiredIdempotencyKeys } from './idempotency/idempotency.service.js';
import { createJobHandlers } from './job-handlers.js';
import { createJobRunner, type JobRunner } from './jobs/jobs.js';
import { systemClock } from './lib/clock.js';
import { createProject, countProjects } from './projects/projects.service.js';
import { createRateLimiter } from './rate-limit/create-rate-limiter.js';
import { createPushRuntime } from './push/push-runtime.js';
import { createConfiguredTemplateRenderer } from './campaigns/render-pool.js';
import { SHOW_KEYS_ONCE } from './lib/redact.js';
import { sealLegacyPushConfigSecrets, secretBoxFor } from './a2a/push-configs/push-config-secrets.js';
import { createMetrics } from './http/metrics.js';
import { instrumentJobHandlers } from './observability/job-metrics.js';
import { createPushMetrics } from './observability/push-metrics.js';
import { registerQueueMetrics } from './observability/queue-metrics.js';
import { startWorkerServer } from './observability/worker-server.js';

export interface Runtime {
  app: App | undefined;
  /** The worker role's health and metrics server (`WORKER_METRICS_PORT`); only when the role is `worker`. */
  workerServer: App | undefined;
  database: DatabaseHandle;
  stop(): Promise<void>;
}

export function openConfiguredDatabase(config: Config, logger?: Logger): DatabaseHandle {
  const database = openDatabase({
    url: config.databaseUrl,
    sqliteFile: path.join(config.dataDir, 'herald.sqlite'),
    poolSize: config.databasePoolSize,
    onPoolError: (error) => logger?.warn({ err: error }, 'database connection lost'),
  });
  return database;
}

/**
 * G3: on first start against an empty embedded database, create the `default` project and print
 * its keys once. Never on PostgreSQL, where projects are made deliberately with the CLI.
 */
async function createDefaultProjectIfEmpty(database: DatabaseHandle, logger: Logger): Promise<void> {
  if (database.dialect !== 'sqlite' || (await countProjects(database.db)) > 0) return;
  const project = await createProject(database.db, systemClock, 'default');
  logger.info(
    {
      [SHOW_KEYS_ONCE]: true,
      project_id: project.project_id,
      public_key: project.public_key,
      secret_key: project.secret_key,
    },
    'created the default project; keep these keys, they are not shown again',
  );
}

/** Workers delete idempotency keys past their 24 h this often, so the table stays bounded. */
const IDEMPOTENCY_CLEANUP_INTERVAL_MS = 60 * 60 * 1000;

/** Opens the database, migrates, and starts the roles this process has (S3). */
export async function startRuntime(config: Config, logger: Logger): Promise<Runtime> {
  const database = openConfiguredDatabase(config, logger);
  const applied = await migrateToLatest(database.db);
  if (applied.length > 0) logger.info({ migrations: applied }, 'applied migrations');
  await createDefaultProjectIfEmpty(database, logger);
  await sealLegacyPushConfigSecrets(database.db, secretBoxFor(config, database.dialect)).then(
    (sealed) => sealed > 0 && logger.info({ sealed }, 'sealed the secrets of push configs stored before sealing'),
    (error: unknown) => logger.warn({ err: error }, 'push config secrets stored before sealing stay unsealed'),
  );

  const rateLimiter = createRateLimiter(config, database, { logger });
  // One registry per process: the API's /metrics (or the worker's) shows sends, jobs and HTTP alike.
  const metrics = createMetrics();
  // Push connections, auth caches and quotas live as long as the process; the API and the workers share them.
  const push = createPushRuntime(config, database, { logger, observer: createPushMetrics(metrics.registry) });
  // Campaign templates render in worker threads (dry runs in the API, fan-out in the workers).
  const templates = createConfiguredTemplateRenderer(config, logger, { warm: true });
  let app: App | undefined;
  if (config.role !== 'worker') {
    app = await buildApp({
      config,
      db: database.db,
      dialect: database.dialect,
      pgPool: database.pgPool,
      logger,
      clock: systemClock,
      rateLimiter,
      push,
      templates,
      metrics,
    });
    await app.listen({ port: config.port, host: config.host });
  }
  let jobRunner: JobRunner | undefined;
  let workerServer: App | undefined;
  let idempotencyCleanup: NodeJS.Timeout | undefined;
  if (config.role !== 'api') {
    const featureHandlers = createJobHandlers({
      config,
      db: database.db,
      dialect: database.dialect,
      logger,
      clock: systemClock,
      push,
      templates,
    });
    const handlers = instrumentJobHandlers(featureHandlers, metrics.registry);
    registerQueueMetrics(metrics.registry, database.db, systemClock, Object.keys(featureHandlers), logger);
    jobRunner = createJobRunner({
      db: database.db,
      pgPool: database.pgPool,
      logger,
      clock: systemClock,
      handlers,
      concurrency: config.jobConcurrency,
      pollIntervalMs: config.jobPollIntervalMs,
      leaseMs: config.jobLeaseMs,
      // Leave time inside the shutdown budget (main.ts) for aborting stragglers and closing the database.
      drainTimeoutMs: Math.max(0, config.shutdownTimeoutMs - 2000),
    });
    await jobRunner.start();
    idempotencyCleanup = setInterval(() => {
      deleteExpiredIdempotencyKeys(database.db, systemClock).catch((error: unknown) =>
        logger.warn({ err: error }, 'deleting expired idempotency keys failed'),
      );
    }, IDEMPOTENCY_CLEANUP_INTERVAL_MS);
    idempotencyCleanup.unref();
    // Without the API in this process, the worker still needs somewhere to answer probes and scrapes.
    if (config.role === 'worker')
      workerServer = await startWorkerServer({
        db: database.db,
        metrics,
        logger,
        host: config.host,
        port: config.workerMetricsPort,
      });
  }

  let stopped = false;
  return {
    app,
    workerServer,
    database,
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(idempotencyCleanup);
      // Stop accepting requests and claiming jobs, let in-flight ones finish, then close what they used.
      await Promise.all([app?.close(), jobRunner?.stop(), workerServer?.close()]);
      await push.close();
      await templates.close();
      await rateLimiter.close();
      await database.close();
    },
  };
}
