// `--count-statements` of bench:users: how many statements a Herald server sent to PostgreSQL per
// request it answered, by what they do, read from the files bench/lib/statement-count-preload.ts
// writes in each server process. Each statement is a round trip and, outside a transaction, a commit.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BenchProcess } from './processes.js';

/** What a statement does, by the first pattern its text matches; the rest count as `other`. */
const KINDS: Array<[kind: string, pattern: RegExp]> = [
  ['API key reads', /from "api_keys"/],
  ['rate-limit takes', /rate_limit_buckets/],
  ['user and device writes', /^(insert into "users"|with "inserted_user"|with input as)/],
  ['job queue', /"jobs"/],
];

export interface StatementCounting {
  /** The environment that loads the counter into a Herald server (added to its NODE_OPTIONS). */
  env(nodeOptions?: string): Record<string, string>;
  /** A line per server named: statements per answered request, in all and by kind, so far. */
  report(servers: Array<{ name: string; procs: BenchProcess[] }>): string;
}

export function statementCounting(): StatementCounting {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-statements-'));

  function perRequest(procs: BenchProcess[]): string {
    let requests = 0;
    const counts = new Map<string, number>();
    for (const proc of procs) {
      const [head = '', , ...lines] = fs.readFileSync(path.join(dir, String(proc.child.pid)), 'utf8').split('\n');
      requests += Number.parseInt(head, 10);
      for (const line of lines) {
        const [n, , text = ''] = line.split('\t');
        const kind = KINDS.find(([, pattern]) => pattern.test(text.trim()))?.[0] ?? 'other';
        counts.set(kind, (counts.get(kind) ?? 0) + Number(n));
      }
    }
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    const byKind = [...counts].map(([kind, n]) => `${kind} ${(n / requests).toFixed(2)}`);
    return `${requests} requests: **${(total / requests).toFixed(2)}** (${byKind.join(', ')})`;
  }

  return {
    env: (nodeOptions) => ({
      HERALD_BENCH_STATEMENTS: dir,
      NODE_OPTIONS: `${nodeOptions ?? ''} --import ./src/boot/ts-resolve.ts --import ./bench/lib/statement-count-preload.ts`,
    }),
    report: (servers) =>
      [
        '',
        "PostgreSQL statements per answered request over the whole run (warm-ups included), counted on `pg`'s Client.query in each Herald process (bench/lib/statement-count-preload.ts); each is a round trip and, outside a transaction, a commit:",
        '',
        ...servers.map(({ name, procs }) => `- ${name}, ${perRequest(procs)}`),
      ].join('\n'),
  };
}
