import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { openDatabase } from '../../src/db/connect.js';
import { createJobRunner, enqueueJob, getJob, type JobRunner } from '../../src/jobs/jobs.js';
import { createTestDatabase, type TestDatabase } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';
import { silentLogger } from '../jobs/test-jobs.js';

/**
 * Runs only in `npm run test:pgbouncer` (vitest.pgbouncer.config.ts), where test databases are
 * reached through PgBouncer in transaction mode; the rest of that run is the ordinary suite.
 */
const PGBOUNCER_URL = process.env.TEST_PGBOUNCER_URL;

async function adminConsole<T extends pg.QueryResultRow>(statement: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: new URL('pgbouncer', PGBOUNCER_URL).toString() });
  await client.connect();
  try {
    // The admin console speaks the simple query protocol only.
    return (await client.query<T>({ text: statement, queryMode: 'simple' } as pg.QueryConfig)).rows;
  } finally {
    await client.end();
  }
}

// Only under vitest.pgbouncer.config.ts (npm run test:pgbouncer), whose global setup starts PgBouncer.
if (PGBOUNCER_URL === undefined) throw new Error('TEST_PGBOUNCER_URL is unset: run npm run test:pgbouncer');

describe('PostgreSQL through PgBouncer in transaction mode', () => {
  let database: TestDatabase;
  const runners: JobRunner[] = [];
  const dbName = () => new URL(database.target.url!).pathname.slice(1);
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
  });
  afterAll(async () => {
    for (const runner of runners) await runner.stop();
    await database?.destroy();
  });

  it('test databases are served by PgBouncer in transaction mode (its own counters move)', async () => {
    expect(new URL(database.target.url!).port).toBe(new URL(PGBOUNCER_URL).port);
    const stats = async () =>
      Number(
        (await adminConsole<{ database: string; total_xact_count: string }>('SHOW STATS')).find(
          (r) => r.database === dbName(),
        )?.total_xact_count ?? 0,
      );
    const before = await stats();
    for (let i = 0; i < 5; i++) await database.db.selectFrom('projects').select('id').execute();
    await waitFor(async () => (await stats()) >= before + 5, { timeoutMs: 5000 });
    const pools = await adminConsole<{ name: string; pool_mode: string | null }>('SHOW DATABASES');
    expect(pools.find((p) => p.name === dbName())).toBeDefined();
    const config = await adminConsole<{ key: string; value: string }>('SHOW CONFIG');
    expect(config.find((c) => c.key === 'pool_mode')?.value).toBe('transaction');
  });

  it('refuses session settings at connect (search_path in options), so Herald cannot rely on them', async () => {
    const url = new URL(database.target.url!);
    url.searchParams.set('options', '-c search_path=elsewhere');
    const client = new pg.Client({ connectionString: url.toString() });
    await expect(client.connect()).rejects.toThrow(/unsupported startup parameter/);
    await client.end().catch(() => undefined);
  });

  it('with DATABASE_LISTEN_URL, a job enqueued through the pooler wakes a runner at once (its poll is a minute)', async () => {
    expect(database.listenPool).toBeDefined();
    expect(database.listenPool).not.toBe(database.pgPool);
    const done: number[] = [];
    const runner = createJobRunner({
      db: database.db,
      listenPool: database.listenPool,
      logger: silentLogger,
      concurrency: 1,
      pollIntervalMs: 60_000,
      leaseMs: 30_000,
      handlers: { 'test.echo': async ({ value }) => void done.push(value) },
    });
    runners.push(runner);
    await runner.start();
    const started = Date.now();
    await enqueueJob(database.db, 'test.echo', { value: 7 });
    await waitFor(() => done.includes(7), { timeoutMs: 10_000 });
    expect(Date.now() - started).toBeLessThan(10_000);
    await runner.stop();
  });

  it('without DATABASE_LISTEN_URL nothing LISTENs through the pooler and jobs are found by polling', async () => {
    const pooled = openDatabase({ url: database.target.url, pooler: 'transaction', poolSize: 4 });
    try {
      expect(pooled.listenPool).toBeUndefined();
      const runner = createJobRunner({
        db: pooled.db,
        listenPool: pooled.listenPool,
        logger: silentLogger,
        concurrency: 1,
        pollIntervalMs: 100,
        leaseMs: 30_000,
        handlers: { 'test.echo': async () => undefined },
      });
      runners.push(runner);
      await runner.start();
      const id = await enqueueJob(pooled.db, 'test.echo', { value: 8 });
      await waitFor(async () => (await getJob(pooled.db, id))?.state === 'succeeded', { timeoutMs: 10_000 });
      await runner.stop();
    } finally {
      await pooled.close();
    }
  });
});
