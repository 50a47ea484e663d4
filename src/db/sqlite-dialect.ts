import { sql, type RawBuilder } from 'kysely';
import type { JsonKind, SqlDialect } from './sql-dialect.js';

const JSON_TYPES: Record<JsonKind, string[]> = {
  string: ['text'],
  number: ['integer', 'real'],
  boolean: ['true', 'false'],
  null: ['null'],
};
const jsonPath = (key: string): string => `$."${key}"`;
const nestedPath = (path: readonly string[]): string => `$${path.map((k) => `."${k}"`).join('')}`;

function jsonKeyIsKind(column: string, key: string, kind: JsonKind): RawBuilder<boolean> {
  return sql<boolean>`coalesce(json_type(${sql.ref(column)}, ${jsonPath(key)}) in (${sql.join(JSON_TYPES[kind])}), false)`;
}

function textStartsWith(text: RawBuilder<string>, prefix: string): RawBuilder<boolean> {
  return sql<boolean>`(substr(${text}, 1, length(${prefix})) = ${prefix})`;
}

/** SQLite: embedded, one connection, JSON as TEXT read with the JSON1 functions. */
export const sqliteDialect: SqlDialect = {
  name: 'sqlite',
  embedded: true,
  supportsPartitions: false,
  supportsStatementTriggers: false,
  supportsWritesInWith: false,

  skipLocked: (query) => query,
  lockRows: () => Promise.resolve(),
  lockKeys: () => Promise.resolve(),
  textList: (values, alias) => sql`json_each(${JSON.stringify(values)}) as ${sql.id(alias)}`,
  notifyOnCommit: () => Promise.resolve(false),

  // `json_patch` is not used: it follows RFC 7396, where a null deletes the key.
  mergeJsonObject(column, patchJson) {
    const col = sql.ref(column);
    return sql`(select json_group_object(key, case type when 'true' then json('true') when 'false' then json('false')
    when 'null' then json('null') when 'object' then json(value) when 'array' then json(value) else value end)
    from (select key, value, type from json_each(${col}) where key not in (select key from json_each(${patchJson}))
          union all select key, value, type from json_each(${patchJson})))`;
  },
  mergedJsonKeyCount(column, patchJson) {
    const col = sql.ref(column);
    return sql<number>`(select count(*) from (select key from json_each(${col}) union select key from json_each(${patchJson})))`;
  },

  jsonKeyIsKind,
  jsonKeyEquals(column, key, value) {
    const col = sql.ref(column);
    const path = jsonPath(key);
    if (value === null) return sql<boolean>`coalesce(json_type(${col}, ${path}) = 'null', false)`;
    if (typeof value === 'boolean')
      return sql<boolean>`coalesce(json_type(${col}, ${path}) = ${value ? 'true' : 'false'}, false)`;
    return sql<boolean>`coalesce(${jsonKeyIsKind(column, key, typeof value === 'string' ? 'string' : 'number')} and json_extract(${col}, ${path}) = ${value}, false)`;
  },
  jsonKeyText: (column, key) => sql<string>`json_extract(${sql.ref(column)}, ${jsonPath(key)})`,
  jsonPathText(column, path) {
    const col = sql.ref(column);
    const at = nestedPath(path);
    return sql<string | null>`(case when json_type(${col}, ${at}) = 'text' then json_extract(${col}, ${at}) end)`;
  },
  jsonPathNumber(column, path) {
    const col = sql.ref(column);
    const at = nestedPath(path);
    return sql<
      number | null
    >`(case when json_type(${col}, ${at}) in ('integer', 'real') then json_extract(${col}, ${at}) end)`;
  },
  jsonKeyNumber(column, key) {
    const col = sql.ref(column);
    return sql<number>`(case when json_type(${col}, ${jsonPath(key)}) in ('integer', 'real') then json_extract(${col}, ${jsonPath(key)}) end)`;
  },

  textContains: (text, needle) => sql<boolean>`(instr(${text}, ${needle}) > 0)`,
  textStartsWith,
  // SQLite compares text bytewise (BINARY), so the range `>= prefix` and `< prefix || U+10FFFF` is
  // exact and lets the index serve the test.
  indexedTextStartsWith: (text, prefix) =>
    sql<boolean>`(${text} >= ${prefix} and ${text} < ${prefix + '\u{10FFFF}'} and ${textStartsWith(text, prefix)})`,
  // Without ANALYZE statistics SQLite may pick the (project_id, project_user_id) index and fetch the
  // rows in a random order. `users_project_id` is (project_id, id), and user ids are time-ordered
  // (src/lib/ids.ts), so its walk fetches one project's rows in the order they were added: as fast
  // as a scan of the whole table when the project holds all of it, and it never reads another
  // project's users (docs/decisions.md).
  projectUsersInOrder: () => sql`users indexed by users_project_id`,
  epochBucketStart(column, bucketMs) {
    const size = sql.lit(Math.trunc(bucketMs));
    return sql<number>`((${sql.ref(column)} / ${size}) * ${size})`;
  },
};
