import { Counter, Histogram, type Registry } from 'prom-client';
import { RetryJobError } from '../jobs/jobs.js';
import type { JobHandlers } from '../jobs/job-types.js';

type AnyHandler = ((
  payload: unknown,
  helpers: Parameters<NonNullable<JobHandlers[keyof JobHandlers]>>[1],
) => Promise<void>) & {
  finalise?: (payload: unknown, helpers: Parameters<NonNullable<JobHandlers[keyof JobHandlers]>>[1]) => Promise<void>;
};

/**
 * Wraps every job handler to count its runs by kind and result and time them. The queue itself
 * knows nothing of metrics; a run deferred with an uncounted `RetryJobError` is `deferred`, any
 * other throw is `failed` (the queue retries it with backoff, or marks the job dead at its last attempt).
 */
export function instrumentJobHandlers(handlers: JobHandlers, registry: Registry): JobHandlers {
  const runs = new Counter({
    name: 'herald_job_attempts_total',
    help: 'Job runs by kind and result (succeeded, failed, deferred)',
    labelNames: ['kind', 'result'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'herald_job_duration_seconds',
    help: 'Job run time by kind and result',
    labelNames: ['kind', 'result'],
    buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  const wrapped: Record<string, AnyHandler> = {};
  for (const [kind, handler] of Object.entries(handlers as Record<string, AnyHandler | undefined>)) {
    if (!handler) continue;
    const run: AnyHandler = async (payload, helpers) => {
      const started = performance.now();
      let result = 'succeeded';
      try {
        await handler(payload, helpers);
      } catch (error) {
        result = error instanceof RetryJobError && !error.countAsAttempt ? 'deferred' : 'failed';
        throw error;
      } finally {
        runs.inc({ kind, result });
        duration.observe({ kind, result }, (performance.now() - started) / 1000);
      }
    };
    // The finaliser (a spent job's last step) must survive the wrapping, or spent jobs die unfinalised.
    wrapped[kind] = handler.finalise ? Object.assign(run, { finalise: handler.finalise }) : run;
  }
  return wrapped;
}
