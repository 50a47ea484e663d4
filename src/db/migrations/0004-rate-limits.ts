import { sql } from 'kysely';
import { dialectOf } from '../dialect.js';
import { columnTypes } from '../schema-helpers.js';
import type { AnyKysely } from '../database.js';

/**
 * Shared token buckets (rule `rate-limits`, and provider quotas). Only the PostgreSQL backend uses this table; it is
 * created on SQLite too so both databases keep one schema (embedded SQLite keeps buckets in memory).
 * On PostgreSQL it is UNLOGGED: a take writes no WAL, and a crash merely refills every bucket.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  let table = db.schema.createTable('rate_limit_buckets');
  if (dialectOf(db) === 'postgres') table = table.modifyFront(sql`unlogged`);
  await table
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('tokens', 'double precision', (c) => c.notNull())
    .addColumn('updated_at', t.epochMs, (c) => c.notNull())
    // Whether the last take was granted (0/1): RETURNING sees only the new row.
    .addColumn('granted', 'integer', (c) => c.notNull())
    .execute();
}
