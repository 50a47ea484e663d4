import { sql, type RawBuilder } from 'kysely';
import type { SqlDialect } from './sql-dialect.js';

function textStartsWith(text: RawBuilder<string>, prefix: string): RawBuilder<boolean> {
  return sql<boolean>`starts_with(${text}, ${prefix}::text)`;
}

/** PostgreSQL: a shared server, row locks, NOTIFY, partitions and `jsonb`. */
export const postgresDialect: SqlDialect = {
  name: 'postgres',
  embedded: false,
  supportsPartitions: true,
  supportsStatementTriggers: true,
  supportsWritesInWith: true,

  skipLocked: (query) => query.forUpdate().skipLocked(),
  async lockRows(query) {
    await query.forUpdate().execute();
  },
  async lockKeys(db, keys) {
    if (keys.length === 0) return;
    await sql`select pg_advisory_xact_lock(k) from (select distinct hashtextextended(u, 0) as k from unnest(${[...keys]}::text[]) as u order by k) as sorted`.execute(
      db,
    );
  },
  textList: (values, alias) => sql`unnest(${[...values]}::text[]) as ${sql.id(alias)}(value)`,
  async notifyOnCommit(db, channel) {
    await sql`select pg_notify(${channel}, '')`.execute(db);
    return true;
  },

  mergeJsonObject: (column, patchJson) => sql`coalesce(${sql.ref(column)}, '{}'::jsonb) || ${patchJson}::jsonb`,
  mergedJsonKeyCount: (column, patchJson) =>
    sql<number>`(select count(*) from jsonb_object_keys(coalesce(${sql.ref(column)}, '{}'::jsonb) || ${patchJson}::jsonb))`,

  jsonKeyIsKind: (column, key, kind) =>
    sql<boolean>`coalesce(jsonb_typeof(${sql.ref(column)} -> ${key}::text) = ${kind}, false)`,
  // Containment, so a GIN `jsonb_path_ops` index on the column serves it.
  jsonKeyEquals: (column, key, value) =>
    sql<boolean>`(${sql.ref(column)} @> ${JSON.stringify({ [key]: value })}::jsonb)`,
  jsonKeyText: (column, key) => sql<string>`((${sql.ref(column)} ->> ${key}::text) collate "C")`,
  jsonPathText(column, path) {
    const col = sql.ref(column);
    return sql<
      string | null
    >`(case when jsonb_typeof(${col} #> ${[...path]}::text[]) = 'string' then ${col} #>> ${[...path]}::text[] end)`;
  },
  jsonPathNumber(column, path) {
    const col = sql.ref(column);
    return sql<
      number | null
    >`(case when jsonb_typeof(${col} #> ${[...path]}::text[]) = 'number' then (${col} #>> ${[...path]}::text[])::numeric end)`;
  },
  jsonKeyNumber(column, key) {
    const col = sql.ref(column);
    return sql<number>`(case when jsonb_typeof(${col} -> ${key}::text) = 'number' then (${col} ->> ${key}::text)::numeric end)`;
  },

  textContains: (text, needle) => sql<boolean>`(strpos(${text}, ${needle}::text) > 0)`,
  textStartsWith,
  // The order of text depends on the database collation, so a range bound would not be exact: the plain test.
  indexedTextStartsWith: textStartsWith,
  // The planner chooses by its statistics.
  projectUsersInOrder: () => sql.table('users'),
  // The bigint divides exactly; the cast makes the driver answer a number, not a numeric string.
  epochBucketStart(column, bucketMs) {
    const size = sql.lit(Math.trunc(bucketMs));
    return sql<number>`((${sql.ref(column)} / ${size}::bigint) * ${size})::float8`;
  },
};
