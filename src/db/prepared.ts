import type { CompiledQuery, Compilable, Kysely } from 'kysely';
import { dialectOf, type Dialect } from './dialect.js';

/**
 * A query built and compiled once per dialect, then executed with new parameter values.
 *
 * Building and compiling a Kysely query costs more than running a small statement on SQLite
 * (about 0.1 ms for the user upsert), so the hottest statements (API key lookup, user upsert)
 * skip it. `build` receives placeholder values; it must pass every parameter through as a bound
 * value (not as an identifier or raw SQL), and its SQL shape must not depend on the values.
 */
export function preparedQuery<P extends Record<string, unknown>, R>(
  names: readonly (keyof P & string)[],
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any table: the helper is schema-agnostic
  build: (db: Kysely<any>, params: P) => Compilable<R>,
) {
  const cache = new Map<Dialect, { compiled: CompiledQuery<R>; slots: (keyof P | undefined)[] }>();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const prepare = (db: Kysely<any>) => {
    const dialect = dialectOf(db);
    let entry = cache.get(dialect);
    if (!entry) {
      const placeholders = Object.fromEntries(names.map((n) => [n, `\u0000param:${n}`])) as unknown as P;
      const compiled = build(db, placeholders).compile();
      const slots = compiled.parameters.map((value) => {
        const name = typeof value === 'string' && value.startsWith('\u0000param:') ? value.slice(7) : undefined;
        return name as keyof P | undefined;
      });
      entry = { compiled, slots };
      cache.set(dialect, entry);
    }
    return entry;
  };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return async (db: Kysely<any>, params: P): Promise<R[]> => {
    const { compiled, slots } = prepare(db);
    const parameters = compiled.parameters.map((fixed, i) => (slots[i] === undefined ? fixed : params[slots[i]!]));
    const result = await db.executeQuery<R>({ ...compiled, parameters });
    return result.rows;
  };
}
