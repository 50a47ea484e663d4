import { PostgresAdapter, sql, type Kysely, type RawBuilder } from 'kysely';

export type Dialect = 'sqlite' | 'postgres';

/**
 * The one place that asks which database a handle speaks. Works for a `Transaction` too, because
 * it shares the executor (and so the adapter) of the `Kysely` instance it came from.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function dialectOf(db: Kysely<any>): Dialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

/**
 * Merges a JSON object (given as its text) into a JSON object column in one SQL expression, so
 * concurrent writers never lose a key. Supplied keys overwrite; `null` is kept as a value (R4),
 * which is why SQLite's `json_patch` (RFC 7396, null deletes) is not used.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function mergeJsonObject(db: Kysely<any>, column: string, patchJson: string): RawBuilder<unknown> {
  const col = sql.ref(column);
  if (dialectOf(db) === 'postgres') return sql`coalesce(${col}, '{}'::jsonb) || ${patchJson}::jsonb`;
  return sql`(select json_group_object(key, case type when 'true' then json('true') when 'false' then json('false')
    when 'null' then json('null') when 'object' then json(value) when 'array' then json(value) else value end)
    from (select key, value, type from json_each(${col}) where key not in (select key from json_each(${patchJson}))
          union all select key, value, type from json_each(${patchJson})))`;
}

/** Number of keys `mergeJsonObject(column, patchJson)` would produce, to enforce a key limit in the same statement. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function mergedJsonKeyCount(db: Kysely<any>, column: string, patchJson: string): RawBuilder<number> {
  const col = sql.ref(column);
  if (dialectOf(db) === 'postgres') return sql<number>`(select count(*) from jsonb_object_keys(coalesce(${col}, '{}'::jsonb) || ${patchJson}::jsonb))`;
  return sql<number>`(select count(*) from (select key from json_each(${col}) union select key from json_each(${patchJson})))`;
}

/** Whether an error means the database cannot be reached right now (answer 503, not 500). */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH'].includes(code)) return true;
    // PostgreSQL classes 08 (connection), 53 (resources), 57P (operator intervention, e.g. shutdown).
    if (/^(08|53|57P)/.test(code)) return true;
    if (['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_CANTOPEN', 'SQLITE_IOERR', 'SQLITE_FULL'].some((c) => code.startsWith(c))) return true;
  }
  return /timeout exceeded when trying to connect|Connection terminated|connection is closed|database connection is not open/i.test(error.message);
}
