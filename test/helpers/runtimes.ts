import pino, { type Logger } from 'pino';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { Dialect } from '../../src/db/dialect.js';
import { startRuntime, type Runtime } from '../../src/runtime.js';
import { createTestDatabase, type TestDatabase } from './test-db.js';

export interface RuntimeHarness {
  /** The file's database (fresh and migrated), made before its first test. */
  database(): TestDatabase;
  /** Starts a server process's roles in this process (`startRuntime`) on `127.0.0.1`, free ports, with `env`; stopped after the test. */
  start(env: Record<string, string>, logger?: Logger): Promise<Runtime>;
}

/** Register inside `describe.each(TEST_DIALECTS)`: one database per file, one runtime per test. */
export function useRuntimes(dialect: Dialect): RuntimeHarness {
  let database: TestDatabase | undefined;
  let runtime: Runtime | undefined;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterEach(async () => {
    await runtime?.stop();
    runtime = undefined;
  });
  afterAll(async () => {
    await database?.destroy();
  });
  const databaseOf = (): TestDatabase => {
    if (!database) throw new Error('test database not ready');
    return database;
  };
  return {
    database: databaseOf,
    async start(env, logger = pino({ level: 'silent' })) {
      await runtime?.stop();
      const config = loadConfig({
        ...databaseOf().env,
        HOST: '127.0.0.1',
        PORT: '0',
        WORKER_METRICS_PORT: '0',
        ...env,
      });
      runtime = await startRuntime(config, { logger });
      return runtime;
    },
  };
}
