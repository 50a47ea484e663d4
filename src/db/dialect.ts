import { PostgresAdapter, sql, type RawBuilder } from 'kysely';
import type { AnyKysely } from './database.js';

export type Dialect = 'sqlite' | 'postgres';

/**
 * The one place that asks which database a handle speaks. Works for a `Transaction` too, because
 * it shares the executor (and so the adapter) of the `Kysely` instance it came from.
 */
export function dialectOf(db: AnyKysely): Dialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

/**
 * Merges a JSON object (given as its text, or an SQL expression such as `excluded.properties`) into
 * a JSON object column in one SQL expression, so concurrent writers never lose a key. Supplied keys
 * overwrite; `null` is kept as a value (rule `user-properties`), which is why SQLite's `json_patch`
 * (RFC 7396, null deletes) is not used.
 */
export function mergeJsonObject(
  db: AnyKysely,
  column: string,
  patchJson: string | RawBuilder<unknown>,
): RawBuilder<unknown> {
  const col = sql.ref(column);
  if (dialectOf(db) === 'postgres') return sql`coalesce(${col}, '{}'::jsonb) || ${patchJson}::jsonb`;
  return sql`(select json_group_object(key, case type when 'true' then json('true') when 'false' then json('false')
    when 'null' then json('null') when 'object' then json(value) when 'array' then json(value) else value end)
    from (select key, value, type from json_each(${col}) where key not in (select key from json_each(${patchJson}))
          union all select key, value, type from json_each(${patchJson})))`;
}

/** Number of keys `mergeJsonObject(column, patchJson)` would produce, to enforce a key limit in the same statement. */
export function mergedJsonKeyCount(
  db: AnyKysely,
  column: string,
  patchJson: string | RawBuilder<unknown>,
): RawBuilder<number> {
  const col = sql.ref(column);
  if (dialectOf(db) === 'postgres')
    return sql<number>`(select count(*) from jsonb_object_keys(coalesce(${col}, '{}'::jsonb) || ${patchJson}::jsonb))`;
  return sql<number>`(select count(*) from (select key from json_each(${col}) union select key from json_each(${patchJson})))`;
}

/*
 * JSON property access for the campaign condition compiler (rule `condition-language`). Every
 * helper is two-valued: it is false, never NULL, when the key is absent, so conditions can be
 * negated safely. Keys never hold `"` or `\` (the compiler validates names), which keeps them
 * addressable as SQLite JSON paths.
 */
export type JsonKind = 'string' | 'number' | 'boolean' | 'null';
const SQLITE_JSON_TYPES: Record<JsonKind, string[]> = {
  string: ['text'],
  number: ['integer', 'real'],
  boolean: ['true', 'false'],
  null: ['null'],
};
const sqliteJsonPath = (key: string): string => `$."${key}"`;

/** True when the JSON object in `column` holds `key` with a value of `kind`. */
export function jsonKeyIsKind(db: AnyKysely, column: string, key: string, kind: JsonKind): RawBuilder<boolean> {
  const col = sql.ref(column);
  if (dialectOf(db) === 'postgres')
    return sql<boolean>`coalesce(jsonb_typeof(${col} -> ${key}::text) = ${kind}, false)`;
  return sql<boolean>`coalesce(json_type(${col}, ${sqliteJsonPath(key)}) in (${sql.join(SQLITE_JSON_TYPES[kind])}), false)`;
}

/** True when `key` holds exactly `value` (same JSON type; numbers compared numerically). On PostgreSQL a GIN `jsonb_path_ops` index serves it. */
export function jsonKeyEquals(
  db: AnyKysely,
  column: string,
  key: string,
  value: string | number | boolean | null,
): RawBuilder<boolean> {
  const col = sql.ref(column);
  if (dialectOf(db) === 'postgres') return sql<boolean>`(${col} @> ${JSON.stringify({ [key]: value })}::jsonb)`;
  const path = sqliteJsonPath(key);
  if (value === null) return sql<boolean>`coalesce(json_type(${col}, ${path}) = 'null', false)`;
  if (typeof value === 'boolean')
    return sql<boolean>`coalesce(json_type(${col}, ${path}) = ${value ? 'true' : 'false'}, false)`;
  return sql<boolean>`coalesce(${jsonKeyIsKind(db, column, key, typeof value === 'string' ? 'string' : 'number')} and json_extract(${col}, ${path}) = ${value}, false)`;
}

/** The string at `key`, compared in code point order whatever the database collation (meaningful under `jsonKeyIsKind(..., 'string')`). */
export function jsonKeyText(db: AnyKysely, column: string, key: string): RawBuilder<string> {
  const col = sql.ref(column);
  if (dialectOf(db) === 'postgres') return sql<string>`((${col} ->> ${key}::text) collate "C")`;
  return sql<string>`json_extract(${col}, ${sqliteJsonPath(key)})`;
}

/** The number at `key`; NULL (never a cast error) when it holds something else. */
export function jsonKeyNumber(db: AnyKysely, column: string, key: string): RawBuilder<number> {
  const col = sql.ref(column);
  if (dialectOf(db) === 'postgres')
    return sql<number>`(case when jsonb_typeof(${col} -> ${key}::text) = 'number' then (${col} ->> ${key}::text)::numeric end)`;
  return sql<number>`(case when json_type(${col}, ${sqliteJsonPath(key)}) in ('integer', 'real') then json_extract(${col}, ${sqliteJsonPath(key)}) end)`;
}

/** Case-sensitive substring and prefix tests on text (no LIKE: its case rules and escapes differ). */
export function textContains(db: AnyKysely, text: RawBuilder<string>, needle: string): RawBuilder<boolean> {
  return dialectOf(db) === 'postgres'
    ? sql<boolean>`(strpos(${text}, ${needle}::text) > 0)`
    : sql<boolean>`(instr(${text}, ${needle}) > 0)`;
}

export function textStartsWith(db: AnyKysely, text: RawBuilder<string>, prefix: string): RawBuilder<boolean> {
  return dialectOf(db) === 'postgres'
    ? sql<boolean>`starts_with(${text}, ${prefix}::text)`
    : sql<boolean>`(substr(${text}, 1, length(${prefix})) = ${prefix})`;
}

/**
 * A prefix test on an indexed text column that the index can serve: the exact test plus a range bound
 * (`>= prefix` and `< prefix || U+10FFFF`). SQLite compares text bytewise (BINARY), so the bound is
 * exact there; PostgreSQL's order depends on the database collation, so it keeps the plain test.
 */
export function indexedTextStartsWith(db: AnyKysely, text: RawBuilder<string>, prefix: string): RawBuilder<boolean> {
  if (dialectOf(db) === 'postgres') return textStartsWith(db, text, prefix);
  return sql<boolean>`(${text} >= ${prefix} and ${text} < ${prefix + '\u{10FFFF}'} and ${textStartsWith(db, text, prefix)})`;
}

/**
 * A table to read whole, for aggregates over most of it (a broadcast dry run). SQLite has no
 * statistics unless ANALYZE ran, so it would walk a matching index and fetch every row at random;
 * `NOT INDEXED` makes it scan the table in order (several times faster at 1M rows). PostgreSQL's
 * planner chooses by its statistics.
 */
export function wholeTable(db: AnyKysely, table: string): RawBuilder<unknown> {
  return dialectOf(db) === 'postgres' ? sql.table(table) : sql`${sql.table(table)} not indexed`;
}

/**
 * The start (epoch ms) of the fixed-size UTC bucket holding the epoch-ms `column`: integer
 * division, no date functions (`date_trunc` and `strftime` differ and cost more). PostgreSQL
 * divides its bigint exactly; the cast makes the driver answer a number, not a numeric string.
 */
export function epochBucketStart(db: AnyKysely, column: string, bucketMs: number): RawBuilder<number> {
  const col = sql.ref(column);
  const size = sql.lit(Math.trunc(bucketMs));
  if (dialectOf(db) === 'postgres') return sql<number>`((${col} / ${size}::bigint) * ${size})::float8`;
  return sql<number>`((${col} / ${size}) * ${size})`;
}
