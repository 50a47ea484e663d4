import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/connect.js';
import { createJobRunner, enqueueJob, getJob, type JobRunner, type JobRunnerOptions } from '../../src/jobs/jobs.js';
import type { JobHandlers } from '../../src/jobs/job-types.js';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import { deferred, silentLogger } from './test-jobs.js';
import { holdsThroughout, waitFor } from '../helpers/wait-for.js';
import { capturingLogger } from '../helpers/capturing-logger.js';

describe.each(TEST_DIALECTS)('job runner on %s', (dialect) => {
  let database: TestDatabase;
  const runners: JobRunner[] = [];
  const startRunner = async (handlers: JobHandlers, options: Partial<JobRunnerOptions> = {}) => {
    const runner = createJobRunner({
      db: database.db,
      listenPool: database.listenPool,
      logger: silentLogger,
      handlers,
      concurrency: 4,
      pollIntervalMs: 50,
      leaseMs: 60_000,
      ...options,
    });
    runners.push(runner);
    await runner.start();
    return runner;
  };
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterEach(async () => {
    await Promise.all(runners.splice(0).map((r) => r.stop()));
    // Each test starts from an empty queue (a job handed back by one test must not run in the next).
    await database.db.deleteFrom('jobs').execute();
  });
  afterAll(async () => {
    await database?.destroy();
  });

  it('runs jobs with at most `concurrency` at once', async () => {
    const gate = deferred();
    let active = 0;
    let maxActive = 0;
    let done = 0;
    await startRunner(
      {
        'test.echo': async () => {
          active += 1;
          maxActive = Math.max(maxActive, active);
          await gate.promise;
          active -= 1;
          done += 1;
        },
      },
      { concurrency: 2 },
    );
    const ids = await Promise.all([1, 2, 3, 4, 5].map((value) => enqueueJob(database.db, 'test.echo', { value })));
    await waitFor(() => active === 2, { what: 'two jobs run' });
    gate.resolve();
    await waitFor(() => done === 5, { what: 'all jobs ran' });
    expect(maxActive).toBe(2);
    await waitFor(
      async () => (await Promise.all(ids.map((id) => getJob(database.db, id)))).every((j) => j?.state === 'succeeded'),
      { what: 'all succeeded' },
    );
  });

  it('stop() stops claiming and waits for the in-flight job before resolving', async () => {
    const release = deferred();
    const started = deferred();
    const asked = deferred();
    const runner = await startRunner({
      'test.echo': async ({ value }, { stopping }) => {
        if (value === 1) started.resolve();
        stopping.addEventListener('abort', () => asked.resolve());
        await release.promise;
      },
    });
    const id = await enqueueJob(database.db, 'test.echo', { value: 1 });
    await started.promise;
    let stopped = false;
    const stopping = runner.stop().then(() => (stopped = true));
    const queuedAfterStop = await enqueueJob(database.db, 'test.echo', { value: 2 });
    // From the moment stop() has asked the job to stop, it must keep waiting while the job runs.
    await asked.promise;
    await holdsThroughout(() => !stopped, { forMs: 150, what: 'stop() waiting for the running job' });
    expect((await getJob(database.db, id))?.state).toBe('running');
    release.resolve();
    await stopping;
    expect(await getJob(database.db, id)).toMatchObject({ state: 'succeeded', attempts: 1 });
    expect(await getJob(database.db, queuedAfterStop)).toMatchObject({ state: 'pending', attempts: 0 });
  });

  it('after the drain timeout aborts the job signal and hands the job back without spending an attempt', async () => {
    const started = deferred();
    let abortReason: unknown;
    const runner = await startRunner(
      {
        'test.block': async (_payload, { signal }) => {
          started.resolve();
          await new Promise((_resolve, reject) =>
            signal.addEventListener('abort', () => reject((abortReason = signal.reason))),
          );
        },
      },
      { drainTimeoutMs: 100 },
    );
    const id = await enqueueJob(database.db, 'test.block', {});
    await started.promise;
    await runner.stop();
    expect(String(abortReason)).toContain('shutting down');
    expect(await getJob(database.db, id)).toMatchObject({ state: 'pending', attempts: 0, lockedBy: null });
  });

  it('releases the lease of a job that ignores the abort before stop() resolves, uncounted and due now', async () => {
    const started = deferred();
    const never = deferred();
    const runner = await startRunner(
      {
        'test.block': async () => {
          started.resolve();
          await never.promise; // listens to no signal
        },
      },
      { drainTimeoutMs: 50 },
    );
    const id = await enqueueJob(database.db, 'test.block', {});
    await started.promise;
    const before = Date.now();
    await runner.stop();
    const job = await getJob(database.db, id);
    expect(job).toMatchObject({ state: 'pending', attempts: 0, lockedBy: null, lockedUntil: null });
    expect(job!.runAt).toBeGreaterThanOrEqual(before);
    expect(job!.runAt).toBeLessThanOrEqual(Date.now());
    // The handler ending late finds the job no longer its own: its outcome changes nothing.
    never.resolve();
    await holdsThroughout(async () => (await getJob(database.db, id))?.state === 'pending', {
      forMs: 100,
      what: 'the released job staying pending',
    });
  });

  it('handBack() aborts running jobs and releases their leases at once, without waiting for the drain', async () => {
    const started = deferred();
    const never = deferred();
    let aborted = false;
    const runner = await startRunner({
      'test.block': async (_payload, { signal }) => {
        signal.addEventListener('abort', () => (aborted = true));
        started.resolve();
        await never.promise;
      },
    });
    const id = await enqueueJob(database.db, 'test.block', {});
    await started.promise;
    expect(await runner.handBack()).toBe(1);
    expect(aborted).toBe(true);
    expect(await getJob(database.db, id)).toMatchObject({ state: 'pending', attempts: 0, lockedBy: null });
    // The wake-up its release sends does not make this worker claim the job again.
    await holdsThroughout(async () => (await getJob(database.db, id))?.state === 'pending', {
      forMs: 300,
      what: 'the handed-back job staying pending',
    });
    expect(await runner.handBack()).toBe(1); // once: a second call answers the first one's count
    never.resolve();
  });

  it('reschedules a run that failed on the database without spending an attempt', async () => {
    let runs = 0;
    await startRunner({
      'test.echo': async () => {
        runs += 1;
        if (runs === 1)
          throw Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
      },
    });
    const id = await enqueueJob(database.db, 'test.echo', { value: 1 });
    await waitFor(async () => (await getJob(database.db, id))?.state === 'succeeded', {
      what: 'the job to succeed on its second run',
      timeoutMs: 10_000,
    });
    // Claimed twice, one attempt counted: the outage was not the job's failure.
    expect(runs).toBe(2);
    expect(await getJob(database.db, id)).toMatchObject({ attempts: 1, lastError: null });
  });

  it('renews the lease of a job that runs longer than the lease, so nobody else takes it', async () => {
    const otherRuns: string[] = [];
    const release = deferred();
    const started = deferred<string>();
    await startRunner(
      {
        'test.block': async (_p, { jobId }) => {
          started.resolve(jobId);
          await release.promise;
        },
      },
      { leaseMs: 600 },
    );
    const id = await enqueueJob(database.db, 'test.block', {});
    expect(await started.promise).toBe(id);
    const claimed = (await getJob(database.db, id))!;
    const firstLeaseEnd = claimed.lockedUntil!;
    // A second worker keeps trying (every 50 ms) until a whole lease length past the end of the
    // first lease, which only the renewals keep alive.
    const other = await startRunner(
      { 'test.block': async (_p, { jobId }) => void otherRuns.push(jobId) },
      { leaseMs: 600, pollIntervalMs: 50 },
    );
    await waitFor(() => Date.now() > firstLeaseEnd + 600 || otherRuns.length > 0, {
      what: 'a lease length past the first lease',
    });
    await other.stop();
    const during = await getJob(database.db, id);
    release.resolve();
    expect(otherRuns).toEqual([]);
    expect(during).toMatchObject({ state: 'running', attempts: 1, lockedBy: claimed.lockedBy });
    expect(during!.lockedUntil).toBeGreaterThan(firstLeaseEnd); // renewed
    await waitFor(async () => (await getJob(database.db, id))?.state === 'succeeded', { what: 'the job succeeded' });
  });

  it('deletes succeeded jobs after their retention and keeps dead ones', async () => {
    await startRunner(
      {
        'test.echo': async ({ value }) => {
          if (value === 2) throw new Error('always');
        },
      },
      { succeededRetentionMs: 0, cleanupIntervalMs: 50 },
    );
    const ok = await enqueueJob(database.db, 'test.echo', { value: 1 });
    const bad = await enqueueJob(database.db, 'test.echo', { value: 2 }, { maxAttempts: 1 });
    await waitFor(async () => (await getJob(database.db, ok)) === undefined, { what: 'the succeeded job is deleted' });
    // The failing job runs alongside: wait for its outcome; cleanup, which deleted the other, keeps it.
    await waitFor(async () => (await getJob(database.db, bad))?.state === 'dead', { what: 'the failing job is dead' });
    expect((await getJob(database.db, bad))?.state).toBe('dead');
  });

  // PostgreSQL wakes through LISTEN/NOTIFY; SQLite wakes a runner in the enqueuing process directly.
  it('wakes at once on an enqueue instead of waiting for the poll', async () => {
    const ran = deferred<string>();
    // The first poll happens at start, before the enqueue; the next is a minute away.
    await startRunner({ 'test.echo': async (_p, { jobId }) => ran.resolve(jobId) }, { pollIntervalMs: 60_000 });
    const id = await database.db.transaction().execute((trx) => enqueueJob(trx, 'test.echo', { value: 1 }));
    expect(await ran.promise).toBe(id);
  }, 20_000);

  // PostgreSQL only: SQLite has no listening connection to lose.
  if (dialect === 'postgres')
    it('listens again after its connection is killed', async () => {
      const { logger, records } = capturingLogger();
      const ran: string[] = [];
      await startRunner(
        { 'test.echo': async (_p, { jobId }) => void ran.push(jobId) },
        { pollIntervalMs: 60_000, logger },
      );
      const listening = () => records().filter((r) => r.msg === 'listening for job wake-ups');
      const pid = listening()[0]?.backend_pid;
      expect(typeof pid).toBe('number');
      await database.pgPool!.query('select pg_terminate_backend($1)', [pid]);
      await waitFor(() => listening().length === 2, { what: 'the listener reconnected' });
      expect(records().some((r) => r.msg === 'job wake-up connection dropped; reconnecting')).toBe(true);
      expect(listening()[1]?.backend_pid).not.toBe(pid);
      const id = await enqueueJob(database.db, 'test.echo', { value: 1 });
      await waitFor(() => ran.includes(id), { what: 'the job ran' });
    }, 20_000);
});

describe('job runner with an unreachable database', () => {
  it('backs off between failed claims instead of spinning', async () => {
    const unreachable = openDatabase({ url: 'postgres://postgres@127.0.0.1:1/test' });
    const { logger, records } = capturingLogger();
    const runner = createJobRunner({
      db: unreachable.db,
      logger,
      handlers: { 'test.echo': async () => {} },
      concurrency: 1,
      pollIntervalMs: 10,
      leaseMs: 60_000,
    });
    const failures = () => records().filter((r) => r.msg === 'claiming jobs failed');
    try {
      await runner.start();
      await waitFor(() => failures().length >= 5, { what: 'five failed claims' });
    } finally {
      await runner.stop();
      await unreachable.close();
    }
    // Without backoff a 10 ms poll would fail every 10 ms; with it, each wait doubles (20, 40, 80,
    // 160 ms ...) and the next claim comes no earlier than the wait announced.
    const delays = failures().map((r) => Number(r.retry_in_ms));
    const times = failures().map((r) => Number(r.time));
    expect(delays.slice(0, 4)).toEqual([20, 40, 80, 160]);
    for (let i = 1; i < 5; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(delays[i - 1]! - 1);
  });
});
