import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type DatabaseHandle, type DatabaseTarget } from '../../src/db/connect.js';
import type { Dialect } from '../../src/db/dialect.js';
import { migrateToLatest } from '../../src/db/migrate.js';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Dialects the suite runs on: `TEST_DIALECTS=sqlite,postgres` (default both). */
export const TEST_DIALECTS: Dialect[] = (process.env.TEST_DIALECTS ?? 'sqlite,postgres')
  .split(',')
  .map((d) => d.trim())
  .filter((d): d is Dialect => d === 'sqlite' || d === 'postgres');

/**
 * Set by `npm run test:pgbouncer` (test/pgbouncer/global-setup.ts): PostgreSQL test databases are
 * then reached through PgBouncer in transaction mode, and LISTEN through the direct server.
 */
const PGBOUNCER_URL = process.env.TEST_PGBOUNCER_URL;

export interface TestDatabase extends DatabaseHandle {
  /** Options that open the same database again (e.g. from a child process). */
  target: Pick<DatabaseTarget, 'url' | 'sqliteFile' | 'schema' | 'pooler' | 'listenUrl'>;
  /** Environment that points a Herald process at this database. */
  env: Record<string, string>;
  destroy(): Promise<void>;
}

export interface TestDatabaseOptions {
  /**
   * PostgreSQL: a database of its own named `<prefix>_<random>` (dropped at `destroy`) instead of a
   * schema in the shared `test` database, for a test that makes its database refuse connections or
   * turn read-only. Other tests use `test` at the same time: only a database made here may be altered.
   */
  ownDatabasePrefix?: string;
}

/**
 * A fresh, migrated database: a SQLite file in a temp dir, or a PostgreSQL schema of its own, so
 * test files (and tests) run in parallel without seeing each other's rows.
 */
export async function createTestDatabase(dialect: Dialect, options: TestDatabaseOptions = {}): Promise<TestDatabase> {
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
  if (PGBOUNCER_URL) return createDatabaseBehindPgbouncer(`t_${suffix}`, PGBOUNCER_URL);
  if (options.ownDatabasePrefix !== undefined)
    return createOwnDatabase(`${options.ownDatabasePrefix}_${suffix}`.toLowerCase());
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

async function adminQuery(text: string): Promise<void> {
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(text);
  } finally {
    await admin.end();
  }
}

/** A PostgreSQL database of its own on the test server (see `ownDatabasePrefix`). */
async function createOwnDatabase(name: string): Promise<TestDatabase> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`);
  await adminQuery(`create database ${name}`);
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  const handle = openDatabase({ url: url.toString(), poolSize: 10 });
  await migrateToLatest(handle.db);
  return {
    ...handle,
    target: { url: url.toString() },
    env: { DATABASE_URL: url.toString() },
    async destroy() {
      await handle.close();
      await adminQuery(`drop database if exists ${name} with (force)`);
    },
  };
}

/**
 * A database of its own rather than a schema: a pooler in transaction mode keeps no session state,
 * so `search_path` cannot be set per connection. Nothing but LISTEN uses the direct connection.
 */
async function createDatabaseBehindPgbouncer(name: string, pgbouncerUrl: string): Promise<TestDatabase> {
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(name, pgbouncerUrl).toString();
  const direct = new URL(TEST_DATABASE_URL);
  direct.pathname = `/${name}`;
  const listenUrl = process.env.TEST_PGBOUNCER_LISTEN === 'none' ? undefined : direct.toString();
  const target = { url, pooler: 'transaction' as const, ...(listenUrl ? { listenUrl } : {}) };
  const handle = openDatabase({ ...target, poolSize: 10 });
  await migrateToLatest(handle.db);
  return {
    ...handle,
    target,
    env: {
      DATABASE_URL: url,
      DATABASE_POOLER: 'transaction',
      ...(listenUrl ? { DATABASE_LISTEN_URL: listenUrl } : {}),
    },
    async destroy() {
      await handle.close();
      const cleanup = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await cleanup.connect();
      await cleanup.query(`drop database if exists ${name} with (force)`);
      await cleanup.end();
    },
  };
}
