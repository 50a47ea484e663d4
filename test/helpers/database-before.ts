import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type DatabaseHandle } from '../../src/db/connect.js';
import type { Dialect } from '../../src/db/dialect.js';
import { migrateUpTo, migrationNames } from '../../src/db/migrate.js';
import { TEST_DATABASE_URL } from './test-db.js';

/** A fresh database migrated to just before `migration` (a migration test's starting point), and how to remove it. */
export async function databaseBefore(
  dialect: Dialect,
  migration: string,
): Promise<{ handle: DatabaseHandle; destroy: () => Promise<void> }> {
  const names = await migrationNames();
  const before = names[names.indexOf(migration) - 1]!;
  if (dialect === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-migration-'));
    const handle = openDatabase({ sqliteFile: path.join(dir, 'herald.sqlite') });
    await migrateUpTo(handle.db, before);
    return { handle, destroy: async () => (await handle.close(), fs.rmSync(dir, { recursive: true, force: true })) };
  }
  const schema = `migration_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const handle = openDatabase({ url: TEST_DATABASE_URL, schema, poolSize: 2 });
  await migrateUpTo(handle.db, before);
  return {
    handle,
    destroy: async () => {
      await handle.close();
      const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await c.connect();
      await c.query(`drop schema if exists ${schema} cascade`);
      await c.end();
    },
  };
}
