import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { Dialect } from './db/dialect.js';
import type { Clock } from './lib/clock.js';
import type { JobHandlers } from './jobs/job-types.js';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { PushRuntime } from './push/push-runtime.js';
import { createWebhookJobHandler } from './a2a/push-configs/webhook.job.js';
import { createCampaignJobHandlers } from './campaigns/campaign-fanout.job.js';

export interface WorkerDeps {
  config: Config;
  db: Kysely<Database>;
  dialect: Dialect;
  logger: Logger;
  clock: Clock;
  /** Push delivery (`sendToDevices` in src/push/push-dispatch.ts); one runtime per process. */
  push: PushRuntime;
}

/** Every feature's job handlers, composed once for the worker role. Features add one line each. */
export function createJobHandlers(_deps: WorkerDeps): JobHandlers {
  return {
    'a2a.webhook': createWebhookJobHandler({ clock: _deps.clock, allowPrivateNetworks: _deps.config.webhookAllowPrivateNetworks }),
    ...createCampaignJobHandlers({ push: _deps.push, clock: _deps.clock, logger: _deps.logger, retryWindowMs: _deps.config.campaignRetryWindowMs }),
  };
}
