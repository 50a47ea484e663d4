import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimJobs, completeJob, rescueExpiredJobs } from '../../src/jobs/jobs.repository.js';
import { AbandonJobError, enqueueJob, getJob, RetryJobError, retryDelayMs } from '../../src/jobs/jobs.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { RETRY_CAP_MS } from '../../src/jobs/job-retry.js';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import { manualClock } from '../helpers/clock.js';
import { countJobs, deferred } from './test-jobs.js';
import { waitFor } from '../helpers/wait-for.js';

/** Where the manual clocks start unless a test needs the wall clock: the same due times in every run. */
const CLOCK_START = 1_700_000_000_000;

describe('retryDelayMs', () => {
  it('keeps half the exponential delay fixed and randomises the other half, up to the cap', () => {
    expect(retryDelayMs(1, () => 0)).toBe(500);
    expect(retryDelayMs(1, () => 1)).toBe(1000);
    expect(retryDelayMs(4, () => 0)).toBe(4000);
    expect(retryDelayMs(4, () => 1)).toBe(8000);
    expect(retryDelayMs(40, () => 1)).toBe(RETRY_CAP_MS);
    expect(retryDelayMs(40, () => 0)).toBe(RETRY_CAP_MS / 2);
  });
});

describe.each(TEST_DIALECTS)('job queue on %s', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterAll(async () => {
    await database?.destroy();
  });

  it('enqueues inside the caller transaction: a rollback leaves no job, a commit leaves one', async () => {
    const before = await countJobs(database.db);
    await expect(
      database.db.transaction().execute(async (trx) => {
        await enqueueJob(trx, 'test.echo', { value: 1 });
        expect(await countJobs(trx)).toBe(before + 1);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await countJobs(database.db)).toBe(before);

    const id = await database.db.transaction().execute((trx) => enqueueJob(trx, 'test.echo', { value: 2 }));
    const job = await getJob(database.db, id);
    expect(job).toMatchObject({
      id,
      kind: 'test.echo',
      payload: { value: 2 },
      state: 'pending',
      attempts: 0,
      maxAttempts: 25,
      lockedBy: null,
    });
    await runJobsUntilIdle(database.db, { 'test.echo': async () => {} });
  });

  it('de-duplicates by job key while the keyed job is unfinished, and not after it finished', async () => {
    const first = await enqueueJob(database.db, 'test.echo', { value: 1 }, { jobKey: 'dedup-1' });
    const again = await enqueueJob(database.db, 'test.echo', { value: 2 }, { jobKey: 'dedup-1' });
    const inTransaction = await database.db
      .transaction()
      .execute((trx) => enqueueJob(trx, 'test.echo', { value: 3 }, { jobKey: 'dedup-1' }));
    const other = await enqueueJob(database.db, 'test.echo', { value: 4 }, { jobKey: 'dedup-2' });
    expect(again).toBe(first);
    expect(inTransaction).toBe(first);
    expect(other).not.toBe(first);

    const seen: number[] = [];
    const result = await runJobsUntilIdle(database.db, { 'test.echo': async ({ value }) => void seen.push(value) });
    expect(result.succeeded).toBe(2);
    expect(seen.sort()).toEqual([1, 4]);
    expect((await getJob(database.db, first))?.state).toBe('succeeded');

    const afterFinish = await enqueueJob(database.db, 'test.echo', { value: 5 }, { jobKey: 'dedup-1' });
    expect(afterFinish).not.toBe(first);
    await runJobsUntilIdle(database.db, { 'test.echo': async () => {} });
  });

  it('de-duplicates a key enqueued concurrently with an uncommitted transaction holding it', async () => {
    const enqueueWhileHeld = async (outcome: 'commit' | 'rollback') => {
      const entered = deferred<number | undefined>();
      const hold = deferred();
      const holder = database.db.transaction().execute(async (trx) => {
        const id = await enqueueJob(trx, 'test.echo', { value: 1 }, { jobKey: `race-${outcome}` });
        entered.resolve(
          dialect === 'postgres'
            ? (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]!.pid
            : undefined,
        );
        await hold.promise;
        if (outcome === 'rollback') throw new Error('roll back');
        return id;
      });
      const holderPid = await entered.promise;
      const second = enqueueJob(database.db, 'test.echo', { value: 2 }, { jobKey: `race-${outcome}` });
      // PostgreSQL: the second insert must really be waiting on the holder's uncommitted key before
      // the holder ends. SQLite runs one transaction at a time, so the second one always comes after.
      if (holderPid !== undefined)
        await waitFor(
          async () =>
            (
              await sql<{
                n: number;
              }>`select count(*) as n from pg_stat_activity where ${holderPid} = any(pg_blocking_pids(pid))`.execute(
                database.db,
              )
            ).rows[0]!.n > 0,
          { what: 'the second enqueue to wait on the first' },
        );
      hold.resolve();
      return { first: await holder.catch(() => undefined), second: await second };
    };
    const committed = await enqueueWhileHeld('commit');
    expect(committed.second).toBe(committed.first);
    const rolledBack = await enqueueWhileHeld('rollback');
    expect(rolledBack.first).toBeUndefined();
    expect(await getJob(database.db, rolledBack.second)).toMatchObject({ state: 'pending', payload: { value: 2 } });
    expect(await runJobsUntilIdle(database.db, { 'test.echo': async () => {} })).toMatchObject({ succeeded: 2 });
  });

  it('runs only jobs that are due and of the kinds it has handlers for', async () => {
    const clock = manualClock();
    const later = await enqueueJob(database.db, 'test.echo', { value: 1 }, { runAt: clock.now() + 60_000 });
    const otherKind = await enqueueJob(database.db, 'test.record', { n: 1 });
    expect((await runJobsUntilIdle(database.db, { 'test.echo': async () => {} }, { clock })).runs).toBe(0);
    clock.advance(60_000);
    expect((await runJobsUntilIdle(database.db, { 'test.echo': async () => {} }, { clock })).succeeded).toBe(1);
    expect((await getJob(database.db, later))?.state).toBe('succeeded');
    expect((await getJob(database.db, otherKind))?.state).toBe('pending');
    await runJobsUntilIdle(database.db, { 'test.record': async () => {} });
  });

  it('backs off exponentially with jitter after failures, keeps last_error, and goes dead after max_attempts', async () => {
    const clock = manualClock(CLOCK_START);
    const id = await enqueueJob(database.db, 'test.echo', { value: 1 }, { maxAttempts: 5, clock });
    const attemptsSeen: Array<[number, number]> = [];
    const failing = {
      'test.echo': async (_: unknown, h: { attempt: number; maxAttempts: number }) => {
        attemptsSeen.push([h.attempt, h.maxAttempts]);
        throw new Error(`provider down (attempt ${h.attempt})`);
      },
    };
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 4; attempt += 1) {
      const result = await runJobsUntilIdle(database.db, failing, { clock });
      expect(result).toMatchObject({ runs: 1, failed: 1 });
      const job = (await getJob(database.db, id))!;
      expect(job).toMatchObject({
        state: 'pending',
        attempts: attempt,
        lastError: `Error: provider down (attempt ${attempt})`,
        lockedBy: null,
      });
      const delay = job.runAt - clock.now();
      const ceiling = 1000 * 2 ** (attempt - 1);
      expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
      expect(delay).toBeLessThanOrEqual(ceiling);
      delays.push(delay);
      // Not due a millisecond early.
      clock.advance(delay - 1);
      expect((await runJobsUntilIdle(database.db, failing, { clock })).runs).toBe(0);
      clock.advance(1);
    }
    expect([...delays].sort((a, b) => a - b)).toEqual(delays);
    const last = await runJobsUntilIdle(database.db, failing, { clock });
    expect(last).toMatchObject({ runs: 1, dead: 1 });
    expect(await getJob(database.db, id)).toMatchObject({
      state: 'dead',
      attempts: 5,
      lastError: 'Error: provider down (attempt 5)',
    });
    expect(attemptsSeen).toEqual([
      [1, 5],
      [2, 5],
      [3, 5],
      [4, 5],
      [5, 5],
    ]);
    clock.advance(RETRY_CAP_MS * 2);
    expect((await runJobsUntilIdle(database.db, failing, { clock })).runs).toBe(0);
  });

  it('continues with a replacement payload without spending attempts', async () => {
    const id = await enqueueJob(database.db, 'test.items', { items: [1, 2, 3, 4, 5] }, { maxAttempts: 1 });
    const handled: number[] = [];
    const attempts: number[] = [];
    const result = await runJobsUntilIdle(database.db, {
      'test.items': async ({ items }, helpers) => {
        attempts.push(helpers.attempt);
        handled.push(...items.slice(0, 2));
        if (items.length > 2) throw new RetryJobError({ payload: { items: items.slice(2) } });
      },
    });
    expect(handled).toEqual([1, 2, 3, 4, 5]);
    expect(attempts).toEqual([1, 1, 1]);
    expect(result).toMatchObject({ runs: 3, retried: 2, succeeded: 1 });
    expect(await getJob(database.db, id)).toMatchObject({ state: 'succeeded', attempts: 1, payload: { items: [5] } });
  });

  it('retries later on request, and counts a RetryJobError with countAsAttempt as a failure', async () => {
    const clock = manualClock(CLOCK_START);
    const id = await enqueueJob(database.db, 'test.items', { items: [1, 2] }, { maxAttempts: 2, clock });
    let calls = 0;
    const handler = {
      'test.items': async () => {
        calls += 1;
        if (calls === 1) throw new RetryJobError({ delayMs: 30_000 });
        throw new RetryJobError({ payload: { items: [9] }, countAsAttempt: true, reason: 'one send failed' });
      },
    };
    await runJobsUntilIdle(database.db, handler, { clock });
    expect(await getJob(database.db, id)).toMatchObject({
      state: 'pending',
      attempts: 0,
      runAt: clock.now() + 30_000,
      lastError: null,
    });
    clock.advance(30_000);
    expect(await runJobsUntilIdle(database.db, handler, { clock })).toMatchObject({ runs: 1, failed: 1 });
    expect(await getJob(database.db, id)).toMatchObject({
      state: 'pending',
      attempts: 1,
      payload: { items: [9] },
      lastError: 'RetryJobError: one send failed',
    });
    clock.advance(1000);
    expect(await runJobsUntilIdle(database.db, handler, { clock })).toMatchObject({ runs: 1, dead: 1 });
  });

  it('makes a job claimable again once its lease expires, and fences the old holder out', async () => {
    const clock = manualClock(CLOCK_START);
    const id = await enqueueJob(database.db, 'test.echo', { value: 7 }, { clock });
    const [claimed] = await claimJobs(database.db, {
      lockToken: 'dead-worker/1',
      now: clock.now(),
      leaseMs: 1000,
      limit: 5,
      kinds: ['test.echo'],
    });
    expect(claimed).toMatchObject({ id, state: 'running', attempts: 1, locked_by: 'dead-worker/1' });

    const runs: number[] = [];
    const handlers = { 'test.echo': async (_: unknown, h: { attempt: number }) => void runs.push(h.attempt) };
    clock.advance(999);
    expect((await runJobsUntilIdle(database.db, handlers, { clock })).runs).toBe(0);
    clock.advance(2);
    expect(await runJobsUntilIdle(database.db, handlers, { clock })).toMatchObject({ runs: 1, succeeded: 1 });
    expect(runs).toEqual([2]);
    // The first worker coming back late cannot overwrite the outcome.
    expect(await completeJob(database.db, { id, lockedBy: 'dead-worker/1' }, clock.now())).toBe(false);
    expect(await getJob(database.db, id)).toMatchObject({ state: 'succeeded', attempts: 2 });
  });

  it('marks a job without a finaliser dead, without running it again, when its worker was lost during the last attempt', async () => {
    const clock = manualClock(CLOCK_START);
    const id = await enqueueJob(database.db, 'test.echo', { value: 8 }, { clock, maxAttempts: 1 });
    await claimJobs(database.db, {
      lockToken: 'lost/1',
      now: clock.now(),
      leaseMs: 1000,
      limit: 5,
      kinds: ['test.echo'],
    });
    clock.advance(1001);
    let ran = false;
    expect(
      await runJobsUntilIdle(database.db, { 'test.echo': async () => void (ran = true) }, { clock }),
    ).toMatchObject({ runs: 1, dead: 1 });
    expect(ran).toBe(false);
    expect(await getJob(database.db, id)).toMatchObject({
      state: 'dead',
      lockedBy: null,
      lastError: 'lease expired (worker lost)',
    });
  });

  it('runs the finaliser once when the worker died during the last attempt, then the job is dead', async () => {
    const clock = manualClock(CLOCK_START);
    const id = await enqueueJob(database.db, 'test.echo', { value: 9 }, { clock, maxAttempts: 2 });
    for (const token of ['lost/1', 'lost/2']) {
      await claimJobs(database.db, {
        lockToken: token,
        now: clock.now(),
        leaseMs: 1000,
        limit: 5,
        kinds: ['test.echo'],
      });
      clock.advance(1001);
      if (token === 'lost/1') await rescueExpiredJobs(database.db, clock.now());
    }
    const ran: string[] = [];
    const handler = Object.assign(async () => void ran.push('run'), {
      finalise: async ({ value }: { value: number }) => void ran.push(`finalise ${value}`),
    });
    expect(await runJobsUntilIdle(database.db, { 'test.echo': handler }, { clock })).toMatchObject({
      runs: 1,
      dead: 1,
    });
    expect(ran).toEqual(['finalise 9']);
    expect(await getJob(database.db, id)).toMatchObject({ state: 'dead', attempts: 3, lockedBy: null });
  });

  it('finalises a job whose last attempt threw, and retries a finaliser that threw', async () => {
    const clock = manualClock(CLOCK_START);
    const id = await enqueueJob(database.db, 'test.echo', { value: 10 }, { clock, maxAttempts: 1 });
    let finaliseCalls = 0;
    const handler = Object.assign(
      async () => {
        throw new Error('provider down');
      },
      {
        finalise: async () => {
          finaliseCalls += 1;
          if (finaliseCalls === 1) throw new Error('database blip');
        },
      },
    );
    expect(await runJobsUntilIdle(database.db, { 'test.echo': handler }, { clock })).toMatchObject({
      runs: 2,
      failed: 2,
    });
    expect(await getJob(database.db, id)).toMatchObject({ state: 'pending', lastError: 'Error: provider down' });
    clock.advance(5000);
    expect(await runJobsUntilIdle(database.db, { 'test.echo': handler }, { clock })).toMatchObject({
      runs: 1,
      dead: 1,
    });
    expect(finaliseCalls).toBe(2);
    expect(await getJob(database.db, id)).toMatchObject({ state: 'dead', lastError: 'Error: provider down' });
  });

  it('AbandonJobError ends a job at once with attempts left: dead with the payload left, or finalised', async () => {
    const clock = manualClock(CLOCK_START);
    const dead = await enqueueJob(database.db, 'test.items', { items: [1, 2, 3] }, { clock, maxAttempts: 10 });
    const abandon = async () => {
      throw new AbandonJobError('deadline passed', { payload: { items: [3] } });
    };
    expect(await runJobsUntilIdle(database.db, { 'test.items': abandon }, { clock })).toMatchObject({
      runs: 1,
      dead: 1,
    });
    expect(await getJob(database.db, dead)).toMatchObject({
      state: 'dead',
      attempts: 1,
      payload: { items: [3] },
      lastError: 'AbandonJobError: deadline passed',
    });

    const finalised = await enqueueJob(database.db, 'test.record', { n: 7 }, { clock, maxAttempts: 10 });
    const ran: number[] = [];
    const handler = Object.assign(
      async () => {
        throw new AbandonJobError('deadline passed');
      },
      { finalise: async ({ n }: { n: number }) => void ran.push(n) },
    );
    expect(await runJobsUntilIdle(database.db, { 'test.record': handler }, { clock })).toMatchObject({
      runs: 2,
      failed: 1,
      dead: 1,
    });
    expect(ran).toEqual([7]);
    expect(await getJob(database.db, finalised)).toMatchObject({ state: 'dead' });
  });

  it('marks a job dead when the worker running its finaliser was lost too', async () => {
    const clock = manualClock(CLOCK_START);
    const id = await enqueueJob(database.db, 'test.echo', { value: 11 }, { clock, maxAttempts: 1 });
    for (const token of ['lost/1', 'lost/2']) {
      await claimJobs(database.db, {
        lockToken: token,
        now: clock.now(),
        leaseMs: 1000,
        limit: 5,
        kinds: ['test.echo'],
      });
      clock.advance(1001);
      await rescueExpiredJobs(database.db, clock.now());
    }
    expect(await getJob(database.db, id)).toMatchObject({
      state: 'dead',
      attempts: 2,
      lastError: 'lease expired while finalising (worker lost)',
    });
  });
});
