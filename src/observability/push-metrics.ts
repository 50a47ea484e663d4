import { Counter, Histogram, type Registry } from 'prom-client';
import type { PushObserver } from '../push/push.types.js';

/**
 * Sends by provider and final status, with the whole send's latency (quota waits and retries
 * included, which is what a sender experiences) and the provider attempts it took.
 */
export function createPushMetrics(registry: Registry): PushObserver {
  const sends = new Counter({
    name: 'herald_push_sends_total',
    help: 'Device sends by provider and final delivery status',
    labelNames: ['provider', 'status'],
    registers: [registry],
  });
  const attempts = new Counter({
    name: 'herald_push_send_attempts_total',
    help: 'Provider requests made by device sends (retries included)',
    labelNames: ['provider'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'herald_push_send_duration_seconds',
    help: 'Device send latency from start to final result (quota waits and retries included), by provider and status',
    labelNames: ['provider', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  return {
    sendsFinished(outcomes) {
      for (const outcome of outcomes) {
        const labels = { provider: outcome.provider, status: outcome.status };
        sends.inc(labels);
        if (outcome.attempts > 0) attempts.inc({ provider: outcome.provider }, outcome.attempts);
        duration.observe(labels, Math.max(0, outcome.completedAt - outcome.createdAt) / 1000);
      }
    },
  };
}
