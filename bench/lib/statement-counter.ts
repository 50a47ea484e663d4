// CAMPAIGN_BENCH_STATEMENTS=file (bench/campaign-run.ts): every statement Herald sends to its database
// during the fan-out, counted by SQL text (numbers and placeholders folded), most frequent first, so a
// change to the round trips per batch shows as a count, with the time spent inside each call (a whole
// statement for better-sqlite3, only the dispatch for pg's asynchronous query). Wraps the drivers'
// query entry points in this process only: pg's `Client.prototype.query`, better-sqlite3's statement runs.
import SQLite from 'better-sqlite3';
import pg from 'pg';

/**
 * Starts counting; the returned function gives the report: one line of the total, then one per SQL
 * shape (`count<TAB>µs<TAB>text`), and stops counting unless `keepCounting`.
 */
export function countStatements(): (keepCounting?: boolean) => string {
  const counts = new Map<string, number>();
  const micros = new Map<string, number>();
  const shape = (text: string) =>
    text
      .replace(/\$\d+|\?/g, '?')
      .replaceAll('?, ', '') // a list of placeholders as one
      .replace(/\s+/g, ' ')
      .slice(0, 240);
  const count = (text: unknown, started: bigint) => {
    if (typeof text !== 'string') return;
    const key = shape(text);
    counts.set(key, (counts.get(key) ?? 0) + 1);
    micros.set(key, (micros.get(key) ?? 0) + Number(process.hrtime.bigint() - started) / 1000);
  };
  const restore: Array<() => void> = [];
  const wrap = <T extends object>(proto: T, name: keyof T, textOf: (self: unknown, args: unknown[]) => unknown) => {
    const original = proto[name] as (...args: unknown[]) => unknown;
    (proto as Record<keyof T, unknown>)[name] = function (this: unknown, ...args: unknown[]) {
      const started = process.hrtime.bigint();
      const result = original.apply(this, args);
      count(textOf(this, args), started);
      return result;
    };
    restore.push(() => ((proto as Record<keyof T, unknown>)[name] = original));
  };
  wrap(pg.Client.prototype, 'query', (_self, args) =>
    typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text,
  );
  const statement = Object.getPrototypeOf(new SQLite(':memory:').prepare('select 1')) as SQLite.Statement;
  for (const name of ['run', 'all', 'get', 'iterate'] as const)
    wrap(statement, name, (self) => (self as SQLite.Statement).source);
  return (keepCounting = false) => {
    if (!keepCounting) for (const undo of restore) undo();
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    return [
      `${total} statements`,
      ...[...counts.entries()]
        .sort((a, b) => b[1] - a[1])
        .map(([text, n]) => `${n}\t${Math.round(micros.get(text) ?? 0)} µs\t${text}`),
    ].join('\n');
  };
}
