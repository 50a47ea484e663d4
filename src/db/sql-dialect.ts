import type { RawBuilder, SelectQueryBuilder } from 'kysely';
import type { AnyKysely } from './database.js';

export type Dialect = 'sqlite' | 'postgres';

/** JSON value types as the condition compiler names them. */
export type JsonKind = 'string' | 'number' | 'boolean' | 'null';

/**
 * Everything Herald does differently on SQLite and PostgreSQL, one member per difference, modelled
 * on Kysely's `DialectAdapter` (capabilities as properties, differing SQL as methods). One object
 * per database kind (`sqliteDialect`, `postgresDialect`), chosen when the database is opened: the
 * composition root hands it on as `DatabaseHandle.dialect`, and statement code reaches the same
 * object through its handle with `sqlDialect(db)` (`dialect.ts`), a transaction included.
 */
export interface SqlDialect {
  readonly name: Dialect;

  /**
   * The database lives in the process and its data directory (SQLite): one Herald instance by
   * design. Otherwise a server that several instances share, so nothing per-instance (a key file,
   * in-memory rate limits, a project made on first start) may stand in for shared state.
   */
  readonly embedded: boolean;
  /** Declarative partitioning (PostgreSQL): retention drops whole day partitions, and a partition key in a WHERE prunes. */
  readonly supportsPartitions: boolean;
  /**
   * Triggers that run once per statement over its new rows (PostgreSQL transition tables): the
   * delivery rollup is kept by one there, in partial rows that are folded later. SQLite has only
   * row triggers, so the code adds the rollup as it writes the ledger.
   */
  readonly supportsStatementTriggers: boolean;
  /**
   * A write may sit in a statement's WITH and the statement use what it returns (PostgreSQL), so a
   * write and the rows that record it commit in one round trip without BEGIN and COMMIT. SQLite
   * allows only SELECT there; its transactions cost no round trips anyway.
   */
  readonly supportsWritesInWith: boolean;

  /**
   * Locks the rows a subquery picks and skips rows another transaction holds (`FOR UPDATE SKIP
   * LOCKED`), so concurrent claimers take different rows. SQLite runs one writer at a time, so the
   * picked rows cannot be taken meanwhile and no clause is needed.
   */
  skipLocked<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O>;
  /**
   * Locks the rows `query` reads until the transaction ends (`FOR UPDATE`), so a count-then-insert
   * cannot race another. On SQLite the transaction's writer lock already excludes every other
   * writer, so nothing runs.
   */
  lockRows<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): Promise<void>;
  /**
   * Serializes the transactions of `db` that name any of the same `keys` until each ends (PostgreSQL
   * transaction-scoped advisory locks on the keys' 64-bit hashes, taken in one sorted order in one
   * statement, so two such transactions never deadlock; a hash collision only serializes more). On
   * SQLite the transaction's writer lock already excludes every other writer, so nothing runs.
   */
  lockKeys(db: AnyKysely, keys: readonly string[]): Promise<void>;
  /**
   * Sends an (empty) notice on `channel` to every listening connection when the transaction of `db`
   * commits (`pg_notify`; dropped on rollback). False, and nothing sent, where the database has no
   * such channel (SQLite): the caller reaches listeners in its own process instead.
   */
  notifyOnCommit(db: AnyKysely, channel: string): Promise<boolean>;

  /**
   * Merges a JSON object (given as its text, or an SQL expression such as `excluded.properties`)
   * into a JSON object column in one SQL expression, so concurrent writers never lose a key.
   * Supplied keys overwrite; `null` is kept as a value (rule `user-properties`).
   */
  mergeJsonObject(column: string, patchJson: string | RawBuilder<unknown>): RawBuilder<unknown>;
  /** Number of keys `mergeJsonObject(column, patchJson)` would produce, to enforce a key limit in the same statement. */
  mergedJsonKeyCount(column: string, patchJson: string | RawBuilder<unknown>): RawBuilder<number>;

  /*
   * JSON property access for the campaign condition compiler (rule `condition-language`). Every test is two-valued: false,
   * never NULL, when the key is absent, so conditions can be negated safely. Keys never hold `"` or
   * `\` (the compiler validates names), which keeps them addressable as SQLite JSON paths.
   */
  /** True when the JSON object in `column` holds `key` with a value of `kind`. */
  jsonKeyIsKind(column: string, key: string, kind: JsonKind): RawBuilder<boolean>;
  /** True when `key` holds exactly `value` (same JSON type; numbers compared numerically). */
  jsonKeyEquals(column: string, key: string, value: string | number | boolean | null): RawBuilder<boolean>;
  /** The string at `key`, compared in code point order whatever the database collation (meaningful under `jsonKeyIsKind(..., 'string')`). */
  jsonKeyText(column: string, key: string): RawBuilder<string>;
  /** The number at `key`; NULL (never a cast error) when it holds something else. */
  jsonKeyNumber(column: string, key: string): RawBuilder<number>;
  /** The string at a nested path of a JSON object column (keys without `"` or `\\`); NULL when absent or not a string. */
  jsonPathText(column: string, path: readonly string[]): RawBuilder<string | null>;
  /** The number at a nested path; NULL (never a cast error) when it holds something else. */
  jsonPathNumber(column: string, path: readonly string[]): RawBuilder<number | null>;

  /** Case-sensitive substring test on text (no LIKE: its case rules and escapes differ). */
  textContains(text: RawBuilder<string>, needle: string): RawBuilder<boolean>;
  /** Case-sensitive prefix test on text. */
  textStartsWith(text: RawBuilder<string>, prefix: string): RawBuilder<boolean>;
  /** A prefix test on an indexed text column, written so that the index can serve it where the collation allows. */
  indexedTextStartsWith(text: RawBuilder<string>, prefix: string): RawBuilder<boolean>;
  /** `users`, for a pass over one project's users in the order they were added (a broadcast dry run's aggregates). */
  projectUsersInOrder(): RawBuilder<unknown>;
  /**
   * The start (epoch ms) of the fixed-size UTC bucket holding the epoch-ms `column`: integer
   * division, no date functions (`date_trunc` and `strftime` differ and cost more).
   */
  epochBucketStart(column: string, bucketMs: number): RawBuilder<number>;
  /**
   * A list of strings as a table `alias(value)` bound as ONE parameter (`unnest` of a text array,
   * `json_each` of a JSON array): one statement text and a handful of bound values whatever the
   * list's length, where an IN list or a multi-row VALUES binds one value per item.
   */
  textList(values: readonly string[], alias: string): RawBuilder<{ value: string }>;
}
