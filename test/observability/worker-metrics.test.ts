import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { enqueueJob, getJob, RetryJobError } from '../../src/jobs/jobs.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { instrumentJobHandlers } from '../../src/observability/job-metrics.js';
import type { Runtime } from '../../src/runtime.js';
import { REPO_ROOT } from '../helpers/processes.js';
import { useRuntimes } from '../helpers/runtimes.js';
import { TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import '../jobs/test-jobs.js';
import { sample } from './metrics-text.js';

const silent = pino({ level: 'silent' });

describe.each(TEST_DIALECTS)('worker observability on %s', (dialect) => {
  const runtimes = useRuntimes(dialect);
  let runtime: Runtime | undefined;
  let database: TestDatabase;
  beforeAll(() => {
    database = runtimes.database();
  });

  const startWorker = async () => {
    runtime = await runtimes.start({ HERALD_ROLE: 'worker', JOB_POLL_INTERVAL_MS: '50' });
    const address = runtime.workerServer?.server.address();
    if (!address || typeof address === 'string') throw new Error('the worker server is not listening');
    return `http://127.0.0.1:${address.port}`;
  };

  it('herald worker serves /healthz, /readyz and /metrics on its own port, and nothing else', async () => {
    const base = await startWorker();
    expect(runtime!.app).toBeUndefined();
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });
    expect((await fetch(`${base}/api/v1/users/alice`)).status).toBe(404);

    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toContain('text/plain');
    const text = await metrics.text();
    // The HTTP server's own request metrics, by route pattern.
    expect(sample(text, 'herald_http_requests_total', { method: 'GET', route: '/healthz', status: '200' })).toBe(1);
    expect(sample(text, 'herald_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    // Known kinds and trigger states are reported as zeros, so alerts see them before anything happens.
    expect(sample(text, 'herald_jobs', { kind: 'a2a.webhook', state: 'pending' })).toBe(0);
    expect(sample(text, 'herald_jobs_due', { kind: 'a2a.webhook' })).toBe(0);
    for (const state of ['queued', 'running', 'completed', 'failed', 'canceled'])
      expect(sample(text, 'herald_campaign_triggers', { state })).toBe(0);
    expect(text).toContain('# TYPE herald_push_send_duration_seconds histogram');
    expect(text).toContain('# TYPE herald_job_attempts_total counter');
    expect(sample(text, 'herald_process_resident_memory_bytes')).toBeGreaterThan(0);

    // The shipped Grafana dashboard asks only for metrics a worker exposes.
    const dashboard = fs.readFileSync(path.join(REPO_ROOT, 'deploy', 'grafana', 'herald-dashboard.json'), 'utf8');
    const exposed = new Set([...text.matchAll(/^# TYPE (\w+) /gm)].map((m) => m[1]));
    const asked = new Set([...dashboard.matchAll(/herald_\w+/g)].map((m) => m[0].replace(/_(bucket|count|sum)$/, '')));
    expect(asked.size).toBeGreaterThan(10);
    expect([...asked].filter((name) => !exposed.has(name))).toEqual([]);
  });

  it('reports queue depth, the due backlog and the age of the oldest job by kind and state', async () => {
    const now = Date.now();
    // `test.echo` has no handler in the server, so these stay pending where the test put them.
    await enqueueJob(database.db, 'test.echo', { value: 1 }, { runAt: now - 90_000 });
    await enqueueJob(database.db, 'test.echo', { value: 2 }, { runAt: now - 30_000 });
    await enqueueJob(database.db, 'test.echo', { value: 3 }, { runAt: now + 3_600_000 });
    const base = await startWorker();
    const text = await (await fetch(`${base}/metrics`)).text();
    expect(sample(text, 'herald_jobs', { kind: 'test.echo', state: 'pending' })).toBe(3);
    expect(sample(text, 'herald_jobs_due', { kind: 'test.echo' })).toBe(2);
    const lateness = sample(text, 'herald_job_oldest_due_seconds', { kind: 'test.echo' })!;
    expect(lateness).toBeGreaterThanOrEqual(89);
    expect(lateness).toBeLessThan(600);
    expect(
      sample(text, 'herald_job_oldest_age_seconds', { kind: 'test.echo', state: 'pending' }),
    ).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'herald_job_oldest_due_seconds', { kind: 'a2a.webhook' })).toBe(0);
  });

  it('counts job attempts by kind and result around the real queue', async () => {
    const registry = new Registry();
    let failures = 0;
    const handlers = instrumentJobHandlers(
      {
        'test.items': async () => {},
        'test.record': async () => {
          failures++;
          throw new Error('provider down');
        },
        'test.block': async () => {
          throw new RetryJobError({ delayMs: 3_600_000 });
        },
      },
      registry,
    );
    await enqueueJob(database.db, 'test.items', { items: [1] });
    await enqueueJob(database.db, 'test.record', { n: 1 }, { maxAttempts: 1 });
    await enqueueJob(database.db, 'test.block', {});
    // Claims only the kinds given (the other tests' `test.echo` jobs are left alone).
    const result = await runJobsUntilIdle(database.db, handlers, { logger: silent });
    expect(result).toMatchObject({ succeeded: 1, dead: 1, retried: 1 });
    expect(failures).toBe(1);
    const text = await registry.metrics();
    expect(sample(text, 'herald_job_attempts_total', { kind: 'test.items', result: 'succeeded' })).toBe(1);
    expect(sample(text, 'herald_job_attempts_total', { kind: 'test.record', result: 'failed' })).toBe(1);
    expect(sample(text, 'herald_job_attempts_total', { kind: 'test.block', result: 'deferred' })).toBe(1);
    expect(sample(text, 'herald_job_duration_seconds_count', { kind: 'test.record', result: 'failed' })).toBe(1);
  });

  it('keeps a handler finaliser through the wrapping, so a spent job is still finalised', async () => {
    const finalised: number[] = [];
    const handler = Object.assign(
      async () => {
        throw new Error('provider down');
      },
      { finalise: async ({ n }: { n: number }) => void finalised.push(n) },
    );
    const handlers = instrumentJobHandlers({ 'test.record': handler }, new Registry());
    const id = await enqueueJob(database.db, 'test.record', { n: 42 }, { maxAttempts: 1 });
    await runJobsUntilIdle(database.db, handlers, { logger: silent });
    expect(finalised).toEqual([42]);
    expect(await getJob(database.db, id)).toMatchObject({ state: 'dead' });
  });
});
