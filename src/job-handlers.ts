import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { Dialect } from './db/dialect.js';
import type { Clock } from './lib/clock.js';
import type { JobHandlers } from './jobs/job-types.js';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { PushRuntime } from './push/push-runtime.js';
import type { TemplateRenderer } from './campaigns/render-pool.js';
import { secretBoxFor } from './a2a/push-configs/push-config-secrets.js';
import { createWebhookJobHandler } from './a2a/push-configs/webhook.job.js';
import { createCampaignJobHandlers } from './campaigns/campaign-fanout.job.js';
import { createWebhookDeliveryHandler } from './webhooks/webhook-delivery.job.js';

export interface WorkerDeps {
  config: Config;
  db: Kysely<Database>;
  dialect: Dialect;
  logger: Logger;
  clock: Clock;
  /** Push delivery (`sendToDevices` in src/push/push-dispatch.ts); one runtime per process. */
  push: PushRuntime;
  /** Campaign template rendering, off the event loop (src/campaigns/render-pool.ts). */
  templates: TemplateRenderer;
}

/** Every feature's job handlers, composed once for the worker role. Features add one line each. */
export function createJobHandlers(_deps: WorkerDeps): JobHandlers {
  return {
    'a2a.webhook': createWebhookJobHandler({
      clock: _deps.clock,
      outbound: { allowPrivateNetworks: _deps.config.outboundAllowPrivateNetworks },
      secrets: secretBoxFor(_deps.config, _deps.dialect),
    }),
    'webhooks.deliver': createWebhookDeliveryHandler({
      clock: _deps.clock,
      outbound: { allowPrivateNetworks: _deps.config.outboundAllowPrivateNetworks },
      secrets: secretBoxFor(_deps.config, _deps.dialect),
      events: _deps.push.events,
    }),
    ...createCampaignJobHandlers({
      push: _deps.push,
      templates: _deps.templates,
      clock: _deps.clock,
      logger: _deps.logger,
      retryWindowMs: _deps.config.campaignRetryWindowMs,
    }),
  };
}
