import { PostgresAdapter, type RawBuilder } from 'kysely';
import type { AnyKysely } from './database.js';
import { postgresDialect } from './postgres-dialect.js';
import type { Dialect, JsonKind, SqlDialect } from './sql-dialect.js';
import { sqliteDialect } from './sqlite-dialect.js';

export type { Dialect, JsonKind, SqlDialect } from './sql-dialect.js';
export { postgresDialect, sqliteDialect };

/**
 * The dialect of the database a handle belongs to: the one `openDatabase` chose, told by the
 * adapter of the Kysely dialect it opened with. A `Transaction` shares the executor (and so the
 * adapter) of the `Kysely` instance it came from, so it answers the same. This is how Kysely
 * itself reaches dialect-specific behaviour (its migrator's lock), and how statement code that is
 * handed only a handle reaches the differences.
 */
export function sqlDialect(db: AnyKysely): SqlDialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? postgresDialect : sqliteDialect;
}

/** The name of the dialect of `db`; migrations and `db/` internals branch on it. */
export function dialectOf(db: AnyKysely): Dialect {
  return sqlDialect(db).name;
}

/*
 * Shorthands of `SqlDialect` methods for statement builders that hold a handle (user upserts, the
 * condition compiler, analytics).
 */

export const mergeJsonObject = (
  db: AnyKysely,
  column: string,
  patchJson: string | RawBuilder<unknown>,
): RawBuilder<unknown> => sqlDialect(db).mergeJsonObject(column, patchJson);

export const mergedJsonKeyCount = (
  db: AnyKysely,
  column: string,
  patchJson: string | RawBuilder<unknown>,
): RawBuilder<number> => sqlDialect(db).mergedJsonKeyCount(column, patchJson);

export const jsonKeyIsKind = (db: AnyKysely, column: string, key: string, kind: JsonKind): RawBuilder<boolean> =>
  sqlDialect(db).jsonKeyIsKind(column, key, kind);

export const jsonKeyEquals = (
  db: AnyKysely,
  column: string,
  key: string,
  value: string | number | boolean | null,
): RawBuilder<boolean> => sqlDialect(db).jsonKeyEquals(column, key, value);

export const jsonKeyText = (db: AnyKysely, column: string, key: string): RawBuilder<string> =>
  sqlDialect(db).jsonKeyText(column, key);

export const jsonKeyNumber = (db: AnyKysely, column: string, key: string): RawBuilder<number> =>
  sqlDialect(db).jsonKeyNumber(column, key);

export const textContains = (db: AnyKysely, text: RawBuilder<string>, needle: string): RawBuilder<boolean> =>
  sqlDialect(db).textContains(text, needle);

export const textStartsWith = (db: AnyKysely, text: RawBuilder<string>, prefix: string): RawBuilder<boolean> =>
  sqlDialect(db).textStartsWith(text, prefix);

export const indexedTextStartsWith = (db: AnyKysely, text: RawBuilder<string>, prefix: string): RawBuilder<boolean> =>
  sqlDialect(db).indexedTextStartsWith(text, prefix);

export const projectUsersInOrder = (db: AnyKysely): RawBuilder<unknown> => sqlDialect(db).projectUsersInOrder();

export const epochBucketStart = (db: AnyKysely, column: string, bucketMs: number): RawBuilder<number> =>
  sqlDialect(db).epochBucketStart(column, bucketMs);
