import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type DatabaseHandle } from '../../src/db/connect.js';
import type { Dialect } from '../../src/db/dialect.js';
import { migrateToLatest } from '../../src/db/migrate.js';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Dialects the suite runs on: `TEST_DIALECTS=sqlite,postgres` (default both). */
export const TEST_DIALECTS: Dialect[] = (process.env.TEST_DIALECTS ?? 'sqlite,postgres')
  .split(',')
  .map((d) => d.trim())
  .filter((d): d is Dialect => d === 'sqlite' || d === 'postgres');

export interface TestDatabase extends DatabaseHandle {
  /** Options that open the same database again (e.g. from a child process). */
  target: { url?: string; sqliteFile?: string; schema?: string };
  /** Environment that points a Herald process at this database. */
  env: Record<string, string>;
  destroy(): Promise<void>;
}

/**
 * A fresh, migrated database: a SQLite file in a temp dir, or a PostgreSQL schema of its own, so
 * test files (and tests) run in parallel without seeing each other's rows.
 */
export async function createTestDatabase(dialect: Dialect): Promise<TestDatabase> {
  const suffix = randomBytes(6).toString('hex');
  if (dialect === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-test-'));
    const sqliteFile = path.join(dir, 'herald.sqlite');
    const handle = openDatabase({ sqliteFile });
    await migrateToLatest(handle.db);
    return {
      ...handle,
      target: { sqliteFile },
      env: { DATA_DIR: dir },
      async destroy() {
        await handle.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const schema = `t_${suffix}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const handle = openDatabase({ url: TEST_DATABASE_URL, schema, poolSize: 10 });
  await migrateToLatest(handle.db);
  const url = new URL(TEST_DATABASE_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    ...handle,
    target: { url: TEST_DATABASE_URL, schema },
    env: { DATABASE_URL: url.toString() },
    async destroy() {
      await handle.close();
      const cleanup = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await cleanup.connect();
      await cleanup.query(`drop schema if exists ${schema} cascade`);
      await cleanup.end();
    },
  };
}
