import type { Clock } from '../../lib/clock.js';
import { OutboundUrlRefused, resolveOutboundTarget, type OutboundPolicy } from '../../lib/outbound-url-policy.js';
import { redactUrl } from '../../lib/redact.js';
import type { JobHandler } from '../../jobs/job-types.js';
import type { SecretBoxSource } from './push-config-secrets.js';
import { postOutbound, POST_PROTOCOLS, POST_RETRY_WINDOW_MS } from '../../lib/outbound-post.js';
import { findStoredConfig } from './push-configs.service.js';

export interface CallbackJobDeps {
  clock: Clock;
  outbound: OutboundPolicy;
  secrets: SecretBoxSource;
  timeoutMs?: number;
}

/**
 * Delivers one status change to one push config (rule `a2a-webhooks`), at least once: a non-2xx answer, a timeout
 * or a network error fails the attempt and the queue retries it with exponential backoff, until
 * 24 h after the change. A deleted config, or a destination that now resolves to a refused
 * address, ends the delivery without retrying.
 */
export function createCallbackJobHandler(deps: CallbackJobDeps): JobHandler<'a2a.webhook'> {
  return async (payload, { db, logger, signal }) => {
    const log = logger.child({ task_id: payload.taskId, push_config_id: payload.configId });
    const config = await findStoredConfig(db, deps.secrets, payload.projectId, payload.taskId, payload.configId);
    if (!config) {
      log.info('push config was deleted; callback dropped');
      return;
    }
    if (deps.clock.now() - payload.createdAt > POST_RETRY_WINDOW_MS) {
      log.warn({ url: redactUrl(config.url) }, 'callback not delivered within 24 h; giving up');
      return;
    }
    let target;
    try {
      target = await resolveOutboundTarget(config.url, deps.outbound, POST_PROTOCOLS);
    } catch (error) {
      if (error instanceof OutboundUrlRefused) {
        log.warn(
          { url: redactUrl(config.url), reason: error.reason },
          'callback destination refused; callback dropped',
        );
        return;
      }
      throw error; // DNS failures are retried
    }
    const headers: Record<string, string> = { 'content-type': payload.contentType, 'user-agent': 'Herald-A2A-Webhook' };
    if (config.token !== undefined) {
      headers['x-a2a-token'] = config.token;
      headers['x-a2a-notification-token'] = config.token;
    }
    if (config.authentication) {
      const { scheme, credentials } = config.authentication;
      headers.authorization = credentials === undefined ? scheme : `${scheme} ${credentials}`;
    }
    const status = await postOutbound({
      target,
      headers,
      body: payload.body,
      signal,
      ...(deps.timeoutMs ? { timeoutMs: deps.timeoutMs } : {}),
    });
    if (status < 200 || status > 299) throw new Error(`callback ${redactUrl(config.url)} answered HTTP ${status}`);
  };
}
