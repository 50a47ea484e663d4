import { DefaultQueryCompiler, sql, type KyselyPlugin } from 'kysely';
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

/** `db` whose compiled statements go through `executeQuery` instead of straight to the database. */
function interceptedStatements(db: Db, executeQuery: (query: { sql: string }) => Promise<unknown>): Db {
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
 * `db` whose statements matching `fails` reject before they reach the database, as a driver bug
 * would (a failure no write expects); every other statement runs.
 */
export function failingStatements(db: Db, fails: (sql: string) => boolean): Db {
  return interceptedStatements(db, (query) =>
    fails(query.sql) ? Promise.reject(new Error('broken shared statement')) : db.executeQuery(query as never),
  );
}

/** `db` with the time (`performance.now()`) each statement was sent, in order. */
export function timedStatements(db: Db): { db: Db; sent: number[] } {
  const sent: number[] = [];
  const timed = interceptedStatements(db, (query) => (sent.push(performance.now()), db.executeQuery(query as never)));
  return { db: timed, sent };
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

let probes = 0;

/**
 * PostgreSQL's plan for `text` as a named statement may keep it: generic, made from the tables'
 * statistics alone, not from `args` (SQL literals, one per parameter). With `analyze` the statement
 * runs, in a transaction then rolled back, so the plan shows what it read, partitions pruned while it ran
 * included.
 */
export async function genericPlan(db: Db, text: string, args: string[], analyze = false): Promise<string> {
  // A name of its own: a probe that failed leaves its prepared statement on the pooled connection.
  const name = `plan_probe_${++probes}`;
  const plan = db.transaction().execute(async (trx) => {
    await sql.raw(`prepare ${name} as ${text}`).execute(trx);
    await sql`set local plan_cache_mode = force_generic_plan`.execute(trx);
    const explain = analyze ? 'explain (analyze, costs off, timing off, summary off)' : 'explain';
    const explained = await sql
      .raw<{ 'QUERY PLAN': string }>(`${explain} execute ${name}(${args.join(', ')})`)
      .execute(trx);
    await sql.raw(`deallocate ${name}`).execute(trx);
    throw new PlanOf(explained.rows.map((r) => r['QUERY PLAN']).join('\n'));
  });
  try {
    return await plan;
  } catch (error) {
    if (error instanceof PlanOf) return error.plan;
    throw error;
  }
}

/** Thrown to roll `genericPlan`'s transaction back, carrying its plan out. */
class PlanOf extends Error {
  readonly plan: string;
  constructor(plan: string) {
    super('plan');
    this.plan = plan;
  }
}
