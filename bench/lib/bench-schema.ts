import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type DatabaseHandle } from '../../src/db/connect.js';

const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Runs `work` on a fresh PostgreSQL schema of the test database (TEST_DATABASE_URL), dropped afterwards. */
export async function withPostgresSchema<T>(work: (handle: DatabaseHandle) => Promise<T>): Promise<T> {
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  const handle = openDatabase({ url: PG_URL, schema, poolSize: 2 });
  try {
    return await work(handle);
  } finally {
    await handle.close();
    await admin.query(`drop schema ${schema} cascade`);
    await admin.end();
  }
}
