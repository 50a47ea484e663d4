import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { registerA2aRoutes } from './a2a/a2a.routes.js';
import { separateTaskWrites, sharedTaskWrites } from './a2a/tasks/task-writes.js';
import { createCallbackJobHandler } from './a2a/push-configs/callback.job.js';
import { buildApp, type App } from './app.js';
import { createCampaignJobHandlers, type FanoutDeps } from './campaigns/fanout/campaign-fanout.job.js';
import { registerCampaignRoutes } from './campaigns/campaigns.routes.js';
import { registerCampaignInsightRoutes } from './campaigns/analytics/campaign-insights.routes.js';
import { registerCampaignResultsRoutes } from './campaigns/results/results.routes.js';
import { registerTriggerStreamRoute } from './campaigns/triggers/trigger-stream.routes.js';
import { createConfiguredTemplateRenderer, type TemplateRenderer } from './campaigns/templates/render-pool.js';
import { registerTriggerRoutes } from './campaigns/triggers/trigger.routes.js';
import { registerTriggerControlRoutes } from './campaigns/triggers/trigger-cancel.routes.js';
import { registerScheduleRoutes } from './campaigns/schedules/schedules.routes.js';
import { registerFrequencyCapRoutes } from './campaigns/policies/frequency-caps.routes.js';
import { registerEligibilityRoutes } from './campaigns/eligibility/eligibility.routes.js';
import { createScheduleOccurrenceHandler } from './campaigns/schedules/schedule-occurrence.job.js';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { startCheckpointer, type CheckpointerOptions } from './db/checkpointer.js';
import { openConfiguredDatabase, type DatabaseHandle } from './db/connect.js';
import { writeCommitterFor, type WriteCommitter } from './db/group-commit.js';
import { registerDeviceRoutes } from './devices/devices.routes.js';
import { registerEventRoutes } from './events/events.routes.js';
import { createEventTriggerObserver } from './campaigns/event-triggers/event-matching.js';
import { createConversionObserver } from './campaigns/conversions/conversion-attribution.js';
import { allObservers } from './events/events.service.js';
import { registerPendingSendRoutes } from './campaigns/event-triggers/pending-sends.routes.js';
import { registerQuietHoursRoutes } from './campaigns/policies/quiet-hours.routes.js';
import { registerUserPolicyRoutes } from './campaigns/policies/user-policy.routes.js';
import { createMetrics, type Metrics } from './http/metrics.js';
import { registerIdentityRoutes } from './identity/identity.routes.js';
import { createJobRunner, type JobRunner } from './jobs/jobs.js';
import type { JobHandlers } from './jobs/job-types.js';
import { systemClock, type Clock } from './lib/clock.js';
import { createLogger } from './logger.js';
import { instrumentJobHandlers } from './observability/job-metrics.js';
import { createPushMetrics } from './observability/push-metrics.js';
import { createPartitionMetrics } from './observability/partition-metrics.js';
import { registerUserProfileRoutes } from './profiles/user-profile.routes.js';
import { registerProjectRoutes } from './projects/projects.routes.js';
import { createSecretBox, resolveSecretKey, type SecretBoxSource } from './crypto/secret-box.js';
import { registerPushCredentialRoutes } from './push/credentials/credentials.routes.js';
import { createPushRuntime, type PushRuntime, type PushRuntimeOptions } from './push/push-runtime.js';
import { registerPushRoutes } from './push/push.routes.js';
import { registerMessageOpenRoutes } from './push/message-opens.routes.js';
import { campaignMessageRecipient } from './campaigns/triggers/trigger-status.service.js';
import { createRateLimiter } from './rate-limit/create-rate-limiter.js';
import type { RateLimiter } from './rate-limit/rate-limiter.js';
import { createRetentionJobHandler } from './retention/retention.job.js';
import { registerUserRoutes } from './users/users.routes.js';
import { separateUserUpserts, sharedUserUpserts } from './users/user-upserts.js';
import { sharedStatementsInFlight } from './db/shared-statements.js';
import { newDevicesThroughTransaction, sharedNewDeviceWrites } from './devices/new-device-writes.js';
import { createNoticeOutbox } from './webhooks/notice-outbox.service.js';
import { createWebhookDeliveryHandler } from './webhooks/webhook-delivery.job.js';
import { registerWebhookRoutes } from './webhooks/webhooks.routes.js';
import { registerTopicRoutes } from './preferences/topics.routes.js';
import { registerPreferenceRoutes } from './preferences/preferences.routes.js';
import { registerPreferenceLinkRoutes } from './preferences/preference-links.routes.js';
import { preferencesImport } from './preferences/preferences-import.js';
import { registerPreferencePageApiRoutes } from './preferences/preference-page-api.routes.js';

/** What a caller swaps in place of what `createHerald` would make from the configuration. */
export interface HeraldOverrides {
  /** An open database (tests pass theirs); Herald uses it and leaves closing it to the caller. */
  database?: DatabaseHandle;
  logger?: Logger;
  clock?: Clock;
  /** Used as given and not closed by Herald. */
  rateLimiter?: RateLimiter;
  /** Push runtime options: an extra trusted CA (the stand-ins'), retry and quota settings, a name resolver. */
  push?: PushRuntimeOptions;
  /** Start the template render workers at once and keep them (a server); default: on first use. */
  warmTemplates?: boolean;
  /** Checkpointer settings of the embedded database (tests use a small WAL bound). */
  checkpointer?: Omit<CheckpointerOptions, 'onError'>;
  /** Fan-out knobs for experiments (bench/campaign-run.ts); the defaults are what Herald ships. */
  fanout?: Pick<FanoutDeps, 'sendChunk' | 'chunksInFlight' | 'batchUsers'>;
}

/**
 * The running system, built once from the configuration. Parts a command may never use (the push
 * runtime with its connection pools, the template workers, the rate limiter's store) are made on
 * first use, so a CLI command that only opens the database costs no more than that.
 */
export interface Herald {
  readonly config: Config;
  readonly database: DatabaseHandle;
  /** `database.db`. */
  readonly db: Kysely<Database>;
  /**
   * `database.readDb`: a replica (DATABASE_READ_URL) or the primary, under DATABASE_READ_TIMEOUT_MS on
   * PostgreSQL. For reads that may lag the primary (lists, audience counts, analytics; dry runs use
   * `database.dryRunDb`); never for a read after a write of the same flow.
   */
  readonly readDb: Kysely<Database>;
  readonly logger: Logger;
  readonly clock: Clock;
  /** One registry per process: `/metrics` (the API's or the worker's) shows HTTP, sends and jobs alike. */
  readonly metrics: Metrics;
  /** The sealing key of push credentials, identity signing keys and A2A push-config secrets. */
  readonly secretBox: SecretBoxSource;
  /** Writes that may share a commit (group commit on SQLite). */
  readonly writes: WriteCommitter;
  readonly rateLimiter: RateLimiter;
  readonly push: PushRuntime;
  readonly templates: TemplateRenderer;
  /** Every feature's job handlers (uninstrumented: tests run them with `runJobsUntilIdle`). */
  readonly jobHandlers: JobHandlers;
  /** The REST and A2A application; it never listens. */
  buildApp(): Promise<App>;
  /** A job runner for every feature's handlers, instrumented, with the configured concurrency, poll, lease and drain. */
  createJobRunner(): JobRunner;
  /** Closes what Herald made (not what was given as an override), the database last. */
  close(): Promise<void>;
}

/** A part made on first use; `made` tells whether it exists (so closing never makes one). */
function onFirstUse<T>(make: () => T): { (): T; made(): T | undefined } {
  let value: T | undefined;
  return Object.assign(() => (value ??= make()), { made: () => value });
}

/** The one composition root: every service once, each feature given only what it declares. */
export function createHerald(config: Config, overrides: HeraldOverrides = {}): Herald {
  const logger = overrides.logger ?? createLogger(config.logLevel);
  const clock = overrides.clock ?? systemClock;
  const database = overrides.database ?? openConfiguredDatabase(config, logger);
  const { db, readDb } = database;
  const metrics = createMetrics();
  // A serving process (API or job runner) checkpoints the embedded database off its event loop.
  const checkpointer = onFirstUse(() =>
    startCheckpointer(database, {
      ...overrides.checkpointer,
      onError: (error) => logger.warn({ err: error }, 'embedded database checkpoint failed'),
    }),
  );
  const writes = writeCommitterFor(db, database.dialect.name);
  const userUpserts = database.dialect.embedded
    ? separateUserUpserts(writes)
    : sharedUserUpserts(db, sharedStatementsInFlight(config.databasePoolSize), logger);
  const newDevices = database.dialect.embedded
    ? newDevicesThroughTransaction
    : sharedNewDeviceWrites(db, writes, clock, sharedStatementsInFlight(config.databasePoolSize), logger);
  const taskWrites = database.dialect.embedded
    ? separateTaskWrites(writes, logger)
    : sharedTaskWrites(db, writes, sharedStatementsInFlight(config.databasePoolSize), logger);
  const outbound = { allowPrivateNetworks: config.outboundAllowPrivateNetworks };
  const secretBox = onFirstUse(() => createSecretBox(resolveSecretKey(config, database.dialect)));
  const rateLimiter = onFirstUse(() => overrides.rateLimiter ?? createRateLimiter(config, database, { logger }));
  const templates = onFirstUse(() =>
    createConfiguredTemplateRenderer(config, logger, { warm: overrides.warmTemplates }),
  );
  const push = onFirstUse(() => {
    const options = { logger, clock, secretBox, observer: createPushMetrics(metrics.registry), ...overrides.push };
    // Notices go to the project's webhooks, cached on the runtime's clock.
    const notices = options.notices ?? createNoticeOutbox({ clock: options.clock });
    const runtime = createPushRuntime(config, database, { ...options, notices });
    for (const metric of runtime.metrics) metrics.registry.registerMetric(metric);
    return runtime;
  });
  const jobHandlers = onFirstUse((): JobHandlers => ({
    'a2a.webhook': createCallbackJobHandler({ clock, outbound, secrets: secretBox }),
    'webhooks.deliver': createWebhookDeliveryHandler({ clock, outbound, secrets: secretBox, notices: push().notices }),
    'retention.enforce': createRetentionJobHandler({
      settings: config.retention,
      clock,
      observeDefaultRows: defaultRows(),
    }),
    ...createCampaignJobHandlers({
      push: push(),
      templates: templates(),
      clock,
      logger,
      retryWindowMs: config.campaignRetryWindowMs,
      ...overrides.fanout,
    }),
    'campaign.schedule-occurrence': createScheduleOccurrenceHandler({
      clock,
      logger,
      lateLimitMs: config.scheduleLateLimitMs,
    }),
  }));
  const defaultRows = onFirstUse(() => createPartitionMetrics(metrics.registry));
  const instrumentedHandlers = onFirstUse(() => instrumentJobHandlers(jobHandlers(), metrics.registry));

  const observeEvents = allObservers(
    createEventTriggerObserver({ db, clock }),
    createConversionObserver({ db, clock, notices: () => push().notices }),
  );
  const registerRoutes = (app: FastifyInstance): void => {
    const identity = { db, secretBox };
    registerUserProfileRoutes(app, { db, clock });
    registerUserRoutes(app, {
      db,
      readDb,
      clock,
      writes,
      userUpserts,
      preferences: preferencesImport({ notices: push().notices }),
    });
    registerDeviceRoutes(app, { ...identity, clock, writes, newDevices, outbound });
    registerEventRoutes(app, { ...identity, clock, writes, observeEvents });
    registerPushRoutes(app, { db, clock, push: push() });
    registerMessageOpenRoutes(app, {
      ...identity,
      clock,
      notices: push().notices,
      campaignRecipient: campaignMessageRecipient,
    });
    registerPushCredentialRoutes(app, { db, clock, push: push() });
    registerA2aRoutes(app, {
      config,
      db,
      clock,
      logger,
      writes,
      taskWrites,
      pgPool: database.pgPool,
      listenPool: database.listenPool,
      rateLimiter: rateLimiter(),
      secretBox,
      outbound,
      push: push(),
      templates: templates(),
      observeEvents,
      readDb,
    });
    registerCampaignRoutes(app, { db, readDb, clock, deleteChunkRows: config.retention.chunkRows });
    registerTriggerRoutes(app, { db, readDb, dryRunDb: database.dryRunDb, clock, templates: templates() });
    registerTriggerControlRoutes(app, { db, clock, notices: push().notices });
    registerScheduleRoutes(app, {
      db,
      clock,
      minIntervalMs: config.scheduleMinIntervalMs,
      notices: push().notices,
    });
    registerCampaignInsightRoutes(app, { db, readDb, templates: templates(), clock });
    registerCampaignResultsRoutes(app, { readDb });
    registerTriggerStreamRoute(app, { db, config });
    registerPendingSendRoutes(app, { db });
    registerQuietHoursRoutes(app, { db, clock });
    registerFrequencyCapRoutes(app, { db });
    registerEligibilityRoutes(app, { db, clock });
    registerUserPolicyRoutes(app, { db, clock });
    registerIdentityRoutes(app, { ...identity, clock });
    registerProjectRoutes(app, { db });
    registerWebhookRoutes(app, { db, clock, outbound, secretBox, notices: push().notices });
    registerTopicRoutes(app, { db, clock });
    registerPreferenceRoutes(app, { ...identity, clock, notices: push().notices });
    registerPreferenceLinkRoutes(app, {
      ...identity,
      clock,
      notices: push().notices,
      publicUrl: config.publicUrl,
    });
    registerPreferencePageApiRoutes(app, { ...identity, clock, notices: push().notices, outbound });
  };

  return {
    config,
    database,
    db,
    readDb,
    logger,
    clock,
    metrics,
    secretBox,
    writes,
    get rateLimiter() {
      return rateLimiter();
    },
    get push() {
      return push();
    },
    get templates() {
      return templates();
    },
    get jobHandlers() {
      return jobHandlers();
    },
    buildApp: () => {
      checkpointer();
      return buildApp({ config, db, logger, rateLimiter: rateLimiter(), metrics, routes: registerRoutes });
    },
    createJobRunner: () => {
      checkpointer();
      return createJobRunner({
        db,
        listenPool: database.listenPool,
        logger,
        clock,
        handlers: instrumentedHandlers(),
        concurrency: config.jobConcurrency,
        pollIntervalMs: config.jobPollIntervalMs,
        leaseMs: config.jobLeaseMs,
        // Leave time inside the shutdown budget (main.ts) for aborting stragglers and closing the database.
        drainTimeoutMs: Math.max(0, config.shutdownTimeoutMs - 2000),
      });
    },
    async close() {
      await push.made()?.close();
      await templates.made()?.close();
      if (!overrides.rateLimiter) await rateLimiter.made()?.close();
      await checkpointer.made()?.stop();
      if (!overrides.database) await database.close();
    },
  };
}
