import { sql, type CompiledQuery, type Kysely } from 'kysely';
import type { Database, Db } from '../../src/db/database.js';
import { dialectOf } from '../../src/db/dialect.js';

/**
 * The plan of `query` on `db`, one line per step: SQLite's `EXPLAIN QUERY PLAN` details, or
 * PostgreSQL's `EXPLAIN` with sequential scans turned off, so that a plan which still scans a table
 * has no index to use.
 */
export async function queryPlan(db: Kysely<Database>, query: CompiledQuery): Promise<string> {
  const sqlite = dialectOf(db) === 'sqlite';
  const explain = async (on: Db) =>
    (
      await on.executeQuery<Record<string, string>>({
        ...query,
        sql: `${sqlite ? 'explain query plan' : 'explain'} ${query.sql}`,
      })
    ).rows
      .map((row) => row.detail ?? row['QUERY PLAN'])
      .join('\n');
  if (sqlite) return explain(db);
  return db.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx);
    return explain(trx);
  });
}
