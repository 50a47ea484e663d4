import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRunner, enqueueJob, getJob } from '../../src/jobs/jobs.js';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import { silentLogger } from './test-jobs.js';
import { waitFor } from '../helpers/wait-for.js';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const WORKER_FIXTURE = path.join(REPO_ROOT, 'test', 'jobs', 'fixtures', 'job-worker.ts');

interface WorkerProcess {
  child: ChildProcess;
  lines: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

describe.each(TEST_DIALECTS)('job workers in separate processes on %s', (dialect) => {
  let database: TestDatabase;
  const workers: WorkerProcess[] = [];

  const spawnWorker = (name: string, env: Record<string, string> = {}): WorkerProcess => {
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER_FIXTURE], {
      cwd: REPO_ROOT,
      env: { ...process.env, JOB_TEST_TARGET: JSON.stringify(database.target), JOB_TEST_NAME: name, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const worker: WorkerProcess = {
      child,
      lines: [],
      exited: new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal }))),
    };
    let buffered = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const parts = buffered.split('\n');
      buffered = parts.pop() ?? '';
      worker.lines.push(...parts);
    });
    workers.push(worker);
    return worker;
  };
  const lineStarting = (worker: WorkerProcess, prefix: string) =>
    worker.lines.find((l) => l.startsWith(prefix))?.slice(prefix.length);
  const waitForLine = async (worker: WorkerProcess, prefix: string) => {
    await waitFor(() => lineStarting(worker, prefix) !== undefined || worker.child.exitCode !== null, {
      what: `a worker printed "${prefix}"`,
      timeoutMs: 30_000,
    });
    const rest = lineStarting(worker, prefix);
    if (rest === undefined) throw new Error(`worker exited before printing "${prefix}"`);
    return rest;
  };

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    await sql`create table job_runs (job_id text not null, worker text not null)`.execute(database.db);
  });
  afterAll(async () => {
    for (const worker of workers)
      if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
    await database?.destroy();
  });

  it('two workers never run one job twice', async () => {
    const a = spawnWorker('a');
    const b = spawnWorker('b');
    await Promise.all([waitForLine(a, 'ready '), waitForLine(b, 'ready ')]);
    const ids: string[] = [];
    for (let batch = 0; batch < 6; batch += 1) {
      const batchIds = await database.db.transaction().execute(async (trx) => {
        const out: string[] = [];
        for (let n = 0; n < 50; n += 1) out.push(await enqueueJob(trx, 'test.record', { n: batch * 50 + n }));
        return out;
      });
      ids.push(...batchIds);
    }
    const unfinished = async () =>
      Number(
        (await sql<{ n: number }>`select count(*) as n from jobs where state <> 'succeeded'`.execute(database.db))
          .rows[0]?.n,
      );
    await waitFor(async () => (await unfinished()) === 0, { what: 'every job succeeded', timeoutMs: 60_000 });

    const runs = (
      await sql<{ job_id: string; worker: string }>`select job_id, worker from job_runs`.execute(database.db)
    ).rows;
    expect(runs).toHaveLength(300);
    expect(new Set(runs.map((r) => r.job_id))).toEqual(new Set(ids));
    const attempts = (
      await sql<{ attempts: number }>`select distinct attempts from jobs`.execute(database.db)
    ).rows.map((r) => Number(r.attempts));
    expect(attempts).toEqual([1]);
    // Both really competed for the jobs.
    expect(new Set(runs.map((r) => r.worker))).toEqual(new Set(['a', 'b']));

    a.child.kill('SIGTERM');
    b.child.kill('SIGTERM');
    expect(await a.exited).toEqual({ code: 0, signal: null });
    expect(await b.exited).toEqual({ code: 0, signal: null });
  }, 90_000);

  it('a job whose worker was killed mid-run runs again once its lease expires', async () => {
    const doomed = spawnWorker('doomed', { JOB_TEST_LEASE_MS: '1000' });
    const doomedId = await waitForLine(doomed, 'ready ');
    const id = await enqueueJob(database.db, 'test.block', { note: 'kill me' });
    expect(await waitForLine(doomed, 'started ')).toBe(id);
    doomed.child.kill('SIGKILL');
    expect((await doomed.exited).signal).toBe('SIGKILL');

    const orphaned = await getJob(database.db, id);
    expect(orphaned).toMatchObject({ state: 'running', attempts: 1 });
    expect(orphaned?.lockedBy?.startsWith(`${doomedId}/`)).toBe(true);

    const reruns: Array<{ attempt: number; at: number }> = [];
    const rescuer = createJobRunner({
      db: database.db,
      listenPool: database.listenPool,
      logger: silentLogger,
      concurrency: 1,
      pollIntervalMs: 50,
      leaseMs: 1000,
      handlers: { 'test.block': async (_p, { attempt }) => void reruns.push({ attempt, at: Date.now() }) },
    });
    try {
      await rescuer.start();
      await waitFor(async () => (await getJob(database.db, id))?.state === 'succeeded', {
        what: 'the orphaned job succeeded',
        timeoutMs: 30_000,
      });
    } finally {
      await rescuer.stop();
    }
    expect(reruns).toHaveLength(1);
    expect(reruns[0]!.attempt).toBe(2);
    // It was taken over only after the dead worker's lease had run out.
    expect(reruns[0]!.at).toBeGreaterThanOrEqual(orphaned!.lockedUntil!);
    expect(await getJob(database.db, id)).toMatchObject({ state: 'succeeded', attempts: 2 });
  }, 60_000);
});
