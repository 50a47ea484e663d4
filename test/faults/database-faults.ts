import pg from 'pg';
import { TEST_DATABASE_URL } from '../helpers/test-db.js';

/**
 * Faults of the database itself (refusing connections, turning read-only), applied to a database a
 * fault test made for itself. Other tests share the server's `test` database at the same time, so
 * anything else is refused here.
 */
export const FAULT_DATABASE_PREFIX = 'herald_fault';
const FAULT_DATABASE = /^herald_fault_[a-z0-9_]+$/;

/** The database name of a PostgreSQL URL, checked to be one made for a fault test. */
export function faultDatabaseOf(url: string | undefined): string {
  const name = decodeURIComponent(new URL(url ?? '').pathname.slice(1));
  if (!FAULT_DATABASE.test(name)) throw new Error(`refusing to alter database "${name}": not made for a fault test`);
  return name;
}

async function admin(statements: Array<{ text: string; values?: unknown[] }>): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    for (const s of statements) await client.query(s.text, s.values);
  } finally {
    await client.end();
  }
}

/** Ends every session on `name` but the caller's (what a failover or an operator does to clients). */
const terminate = (name: string) => ({
  text: 'select count(pg_terminate_backend(pid)) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
  values: [name],
});

/** New connections are refused (SQLSTATE 55000, "not currently accepting connections") and open ones cut. */
export async function refuseConnections(name: string): Promise<void> {
  await admin([
    { text: `alter database ${faultDatabaseOf(`postgres:///${name}`)} allow_connections false` },
    terminate(name),
  ]);
}

export async function allowConnections(name: string): Promise<void> {
  await admin([{ text: `alter database ${faultDatabaseOf(`postgres:///${name}`)} allow_connections true` }]);
}

/**
 * As after a failover whose clients still reach the demoted node: open sessions are cut, and new
 * ones start read-only, so every write fails with SQLSTATE 25006 while reads work.
 */
export async function makeReadOnly(name: string): Promise<void> {
  await admin([
    { text: `alter database ${faultDatabaseOf(`postgres:///${name}`)} set default_transaction_read_only = on` },
    terminate(name),
  ]);
}

/**
 * Writable again for new sessions only: sessions opened while it was read-only stay read-only (as
 * connections to a demoted node do), so a client must drop them itself.
 */
export async function makeWritable(name: string): Promise<void> {
  await admin([
    { text: `alter database ${faultDatabaseOf(`postgres:///${name}`)} reset default_transaction_read_only` },
  ]);
}
