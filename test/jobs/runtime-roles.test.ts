import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startRuntime } from '../../src/runtime.js';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import { capturingLogger } from '../helpers/capturing-logger.js';

describe.each(TEST_DIALECTS)('runtime roles and the job runner on %s', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterAll(async () => {
    await database?.destroy();
  });

  it('HERALD_ROLE=worker runs the job runner and serves no HTTP; stop() drains it', async () => {
    const { logger, messages, records } = capturingLogger();
    const runtime = await startRuntime(
      loadConfig({ ...database.env, HERALD_ROLE: 'worker', HOST: '127.0.0.1', WORKER_METRICS_PORT: '0' }),
      { logger: logger },
    );
    try {
      expect(runtime.app).toBeUndefined();
      expect(messages()).toContain('job runner started');
      // PostgreSQL: the start says what the process may open (a worker: JOB_CONCURRENCY + 2, and its LISTEN).
      const budget = records().find((r) => String(r.msg).startsWith('database connections'));
      if (dialect === 'postgres') expect(budget).toMatchObject({ role: 'worker', pool: 6, listen: 1, total: 7 });
      else expect(budget).toBeUndefined();
    } finally {
      await runtime.stop();
    }
    expect(messages()).toContain('job runner stopped');
  });

  it('HERALD_ROLE=api starts no job runner', async () => {
    const { logger, messages, records } = capturingLogger();
    const runtime = await startRuntime(
      loadConfig({ ...database.env, HERALD_ROLE: 'api', PORT: '0', HOST: '127.0.0.1' }),
      { logger: logger },
    );
    try {
      expect(runtime.app).toBeDefined();
      expect(messages()).not.toContain('job runner started');
      const budget = records().find((r) => String(r.msg).startsWith('database connections'));
      if (dialect === 'postgres') expect(budget).toMatchObject({ role: 'api', pool: 10, listen: 1, total: 11 });
      else expect(budget).toBeUndefined();
    } finally {
      await runtime.stop();
    }
  });
});
