import { DefaultQueryCompiler, type KyselyPlugin } from 'kysely';
import { vi } from 'vitest';
import type { Db } from '../../src/db/database.js';

/** `db` with the row count of every statement it runs, in order. */
export function countingStatements(db: Db): { db: Db; statements: number[] } {
  const statements: number[] = [];
  const plugin: KyselyPlugin = {
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      statements.push(args.result.rows.length);
      return args.result;
    },
  };
  return { db: db.withPlugin(plugin), statements };
}

/**
 * `db` whose statements matching `fails` reject before they reach the database, as a driver bug
 * would (a failure no write expects); every other statement runs.
 */
export function failingStatements(db: Db, fails: (sql: string) => boolean): Db {
  const executeQuery = (query: { sql: string }) =>
    fails(query.sql) ? Promise.reject(new Error('broken shared statement')) : db.executeQuery(query as never);
  return new Proxy(db, {
    get: (target, key) => {
      if (key === 'executeQuery') return executeQuery;
      const value: unknown = Reflect.get(target, key);
      // Kysely's methods read private fields, so they run on the real instance.
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * The lengths of the IN lists on `column` (as the compiled SQL quotes it, e.g. `"devices"."device_id"`)
 * in the statements Kysely compiled while `run` ran: for checking that lists are padded
 * (src/db/statement-shapes.ts).
 */
export async function inListLengthsWhile(run: () => Promise<void>, column: string): Promise<number[]> {
  const spy = vi.spyOn(DefaultQueryCompiler.prototype, 'compileQuery');
  try {
    await run();
    return spy.mock.results
      .map((r) => (r.value as { sql: string }).sql)
      .map((text) => new RegExp(`${column} in \\(([^)]*)\\)`).exec(text)?.[1])
      .filter((list): list is string => list !== undefined)
      .map((list) => list.split(',').length);
  } finally {
    spy.mockRestore();
  }
}
