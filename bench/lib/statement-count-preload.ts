// Loaded into a Herald server process by `bench:users -- --count-statements` (NODE_OPTIONS `--import`,
// after src/boot/ts-resolve.ts): counts the statements the main thread sends to its database and the
// HTTP requests it answers, and rewrites them every half second to `$HERALD_BENCH_STATEMENTS/<pid>`,
// for bench/lib/statements-per-request.ts to read while the server runs.
import diagnostics from 'node:diagnostics_channel';
import fs from 'node:fs';
import path from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { countStatements } from './statement-counter.js';

const dir = process.env.HERALD_BENCH_STATEMENTS;
if (isMainThread && dir) {
  const report = countStatements();
  let requests = 0;
  diagnostics.subscribe('http.server.request.start', () => requests++);
  const file = path.join(dir, String(process.pid));
  setInterval(() => fs.writeFileSync(file, `${requests} requests\n${report(true)}`), 500).unref();
}
