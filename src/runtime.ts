import type { App } from './app.js';
import { connectionBudget } from './settings/connection-budget.js';
import type { Config } from './config.js';
import { migrateToLatest } from './db/migrate.js';
import { sealLegacyPushConfigSecrets } from './a2a/push-configs/push-config-secrets.js';
import { createHerald, type Herald, type HeraldOverrides } from './herald.js';
import type { JobRunner } from './jobs/jobs.js';
import { SHOW_KEYS_ONCE } from './lib/redact.js';
import { registerQueueMetrics } from './observability/queue-metrics.js';
import { startMetricsServer } from './observability/metrics-server.js';
import { countProjects, createProject } from './projects/projects.service.js';
import { requestRetentionPass } from './retention/retention.job.js';

/** A server process: Herald with the roles of `HERALD_ROLE` started (rule `instances`). */
export interface Runtime {
  herald: Herald;
  app: App | undefined;
  /** The worker role's health and metrics server (`WORKER_METRICS_PORT`); only when the role is `worker`. */
  workerServer: App | undefined;
  /** The API role's metrics server (`METRICS_PORT`); only when that is set and the role is `api` or `all`. */
  metricsServer: App | undefined;
  stop(): Promise<void>;
  /**
   * At the shutdown deadline, if `stop()` has not ended: aborts the jobs still running and releases
   * their leases, so another worker resumes them at once rather than after the lease.
   */
  handBackJobs(): Promise<void>;
}

/**
 * Rule `first-run`: on first start against an empty embedded database, create the `default` project and print
 * its keys once. Never on PostgreSQL, where projects are made deliberately with the CLI.
 */
async function createDefaultProjectIfEmpty(herald: Herald): Promise<void> {
  const { database, logger } = herald;
  if (!database.dialect.embedded || (await countProjects(database.db)) > 0) return;
  const project = await createProject(database.db, herald.clock, 'default');
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

/** Builds Herald, migrates, and starts the roles this process has: the API listening, the job runner, or both. */
export async function startRuntime(config: Config, overrides: HeraldOverrides = {}): Promise<Runtime> {
  // Campaign templates render in worker threads (dry runs in the API, fan-out in the workers), started at boot.
  const herald = createHerald(config, { warmTemplates: true, ...overrides });
  const { database, logger, clock } = herald;
  if (!database.dialect.embedded) {
    // What this process may open, so an operator adds up max_connections (docs/operations.md, "Connections").
    const budget = connectionBudget(config);
    logger.info(
      {
        role: budget.role,
        pool: budget.pool,
        listen: budget.listen,
        read_pool: budget.readPool,
        primary: budget.primary,
        total: budget.total,
      },
      `database connections: at most ${budget.total} (query pool ${budget.pool}, LISTEN ${budget.listen}, replica pool ${budget.readPool})`,
    );
  }
  const applied = await migrateToLatest(database.db);
  if (applied.length > 0) logger.info({ migrations: applied }, 'applied migrations');
  await createDefaultProjectIfEmpty(herald);
  await sealLegacyPushConfigSecrets(database.db, herald.secretBox).then(
    (sealed) => sealed > 0 && logger.info({ sealed }, 'sealed the secrets of push configs stored before sealing'),
    (error: unknown) => logger.warn({ err: error }, 'push config secrets stored before sealing stay unsealed'),
  );

  let app: App | undefined;
  let metricsServer: App | undefined;
  if (config.role !== 'worker') {
    app = await herald.buildApp();
    await app.listen({ port: config.port, host: config.host });
    if (config.metricsPort !== undefined)
      metricsServer = await startMetricsServer({
        name: 'metrics',
        db: database.db,
        metrics: herald.metrics,
        metricsToken: config.metricsToken,
        logger,
        host: config.host,
        port: config.metricsPort,
      });
    else if (config.metricsToken === undefined)
      logger.info(
        '/metrics is not served: set METRICS_TOKEN (a bearer token on the API port) or METRICS_PORT (a port of its own)',
      );
  }
  let jobRunner: JobRunner | undefined;
  let workerServer: App | undefined;
  let retentionTimer: NodeJS.Timeout | undefined;
  if (config.role !== 'api') {
    jobRunner = herald.createJobRunner();
    registerQueueMetrics(herald.metrics.registry, database.db, clock, Object.keys(herald.jobHandlers), logger);
    await jobRunner.start();
    // Retention (expired deliveries, events, tasks, idempotency keys; PostgreSQL partitions) runs as
    // a job: at start, so partitions exist ahead before traffic, then every RETENTION_INTERVAL_MS.
    const requestRetention = (): void => {
      requestRetentionPass(database.db, clock).catch((error: unknown) =>
        logger.warn({ err: error }, 'enqueueing the retention pass failed'),
      );
    };
    requestRetention();
    retentionTimer = setInterval(requestRetention, config.retention.intervalMs);
    retentionTimer.unref();
    // Without the API in this process, the worker still needs somewhere to answer probes and scrapes.
    if (config.role === 'worker')
      workerServer = await startMetricsServer({
        name: 'worker',
        db: database.db,
        metrics: herald.metrics,
        metricsToken: config.metricsToken,
        logger,
        host: config.host,
        port: config.workerMetricsPort,
      });
  }

  let stopped = false;
  return {
    herald,
    app,
    workerServer,
    metricsServer,
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(retentionTimer);
      // Stop accepting requests and claiming jobs, let in-flight ones finish, then close what they used.
      await Promise.all([app?.close(), jobRunner?.stop(), workerServer?.close(), metricsServer?.close()]);
      await herald.close();
    },
    async handBackJobs() {
      await jobRunner?.handBack();
    },
  };
}
