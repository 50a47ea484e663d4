import type { CompiledQuery, Compilable, QueryResult } from 'kysely';
import type { AnyKysely } from './database.js';
import { dialectOf } from './dialect.js';
import { statementSizes } from './statement-shapes.js';

/*
 * Statements built and compiled by Kysely once per dialect (and row count), then executed with new
 * parameter values. Building and compiling costs more than running a small statement on SQLite (and
 * about as much as running a 100-row insert), so the hottest statements skip it. A statement is
 * built once with marker strings as its values; the compiled parameters that hold a marker are the
 * slots filled at each execution, any other parameter (a literal the builder added) keeps its
 * compiled value.
 */

const MARKER = '\u0000herald-slot:';

interface Prepared<S> {
  compiled: CompiledQuery;
  /** For each compiled parameter, the value it takes (`undefined`: keep the compiled one). */
  slots: (S | undefined)[];
}

/** Compiles `query`, whose values are the markers of `slots` (marker text → slot). */
function compileWithSlots<S>(query: Compilable<unknown>, slots: ReadonlyMap<string, S>): Prepared<S> {
  const compiled = query.compile();
  return {
    compiled,
    slots: compiled.parameters.map((value) => (typeof value === 'string' ? slots.get(value) : undefined)),
  };
}

/** Compiled statements of one helper, per dialect and shape (a row count). */
function statementCache<S>(prepare: (db: AnyKysely, shape: number) => Prepared<S>) {
  const cache = new Map<string, Prepared<S>>();
  return (db: AnyKysely, shape: number): Prepared<S> => {
    const key = `${dialectOf(db)}:${shape}`;
    let entry = cache.get(key);
    if (!entry) cache.set(key, (entry = prepare(db, shape)));
    return entry;
  };
}

/**
 * A query with named parameters. `build` receives marker values; it must pass every parameter
 * through as a bound value (not as an identifier or raw SQL), and its SQL shape must not depend on
 * the values.
 */
export function preparedQuery<P extends Record<string, unknown>, R>(
  names: readonly (keyof P & string)[],
  build: (db: AnyKysely, params: P) => Compilable<R>,
): (db: AnyKysely, params: P) => Promise<R[]> {
  const execute = preparedExecution(names, build);
  return async (db, params) => (await execute(db, params)).rows;
}

/**
 * `preparedQuery` for a statement without `RETURNING` (INSERT, UPDATE, DELETE), answering how many
 * rows it changed: both drivers report the count (`sqlite3_changes()`, PostgreSQL's `rowCount`), and
 * on SQLite a statement that returns nothing runs without building result rows (so an `ON CONFLICT
 * DO NOTHING` insert learns whether it inserted for less than a `RETURNING` costs).
 */
export function preparedCommand<P extends Record<string, unknown>>(
  names: readonly (keyof P & string)[],
  build: (db: AnyKysely, params: P) => Compilable<unknown>,
): (db: AnyKysely, params: P) => Promise<number> {
  const execute = preparedExecution(names, build);
  return async (db, params) => {
    const changed = (await execute(db, params)).numAffectedRows;
    if (changed === undefined) throw new Error('the driver did not report the rows changed');
    return Number(changed);
  };
}

/** Compiles `build` once per dialect with markers, then runs it with each call's values in their slots. */
function preparedExecution<P extends Record<string, unknown>, R>(
  names: readonly (keyof P & string)[],
  build: (db: AnyKysely, params: P) => Compilable<R>,
): (db: AnyKysely, params: P) => Promise<QueryResult<R>> {
  const statement = statementCache((db) => {
    const markers = new Map(names.map((name) => [`${MARKER}${name}`, name]));
    return compileWithSlots(build(db, Object.fromEntries([...markers].map(([m, n]) => [n, m])) as P), markers);
  });
  return (db, params) => {
    const { compiled, slots } = statement(db, 0);
    const parameters = compiled.parameters.map((fixed, i) => {
      const name = slots[i];
      return name === undefined ? fixed : params[name];
    });
    return db.executeQuery<R>({ ...compiled, parameters });
  };
}

/**
 * A multi-row INSERT of `columns`, run in statements of up to `rowsPerStatement` rows, each a power of
 * two (one compiled statement per dialect and row count, so a few). `build` receives rows of markers and returns the insert
 * (with any `ON CONFLICT` clause); the same rules as `preparedQuery` apply to it. Answers the rows
 * a `RETURNING` clause produced (none without one).
 */
export function preparedInsert<Row extends object, R = unknown>(
  columns: readonly (keyof Row & string)[],
  build: (db: AnyKysely, rows: Row[]) => Compilable<R>,
  rowsPerStatement: number,
): (db: AnyKysely, rows: readonly Row[]) => Promise<R[]> {
  type Slot = readonly [row: number, column: keyof Row & string];
  const statement = statementCache<Slot>((db, rowCount) => {
    const markers = new Map<string, Slot>();
    const rows = Array.from({ length: rowCount }, (_, r) =>
      Object.fromEntries(
        columns.map((column) => {
          const marker = `${MARKER}${r}:${column}`;
          markers.set(marker, [r, column]);
          return [column, marker];
        }),
      ),
    ) as Row[];
    return compileWithSlots(build(db, rows), markers);
  });
  return async (db, rows) => {
    const returned: R[] = [];
    let i = 0;
    // Power-of-two row counts: a few compiled statements per dialect, not one per count (statement-shapes.ts).
    for (const size of statementSizes(rows.length, rowsPerStatement)) {
      const part = rows.slice(i, (i += size));
      const { compiled, slots } = statement(db, part.length);
      const parameters = compiled.parameters.map((fixed, k) => {
        const slot = slots[k];
        return slot === undefined ? fixed : part[slot[0]]![slot[1]];
      });
      returned.push(...(await db.executeQuery<R>({ ...compiled, parameters })).rows);
    }
    return returned;
  };
}
