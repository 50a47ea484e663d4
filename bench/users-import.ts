// bench:import — `herald users import` of N users (default 1,000,000) from an NDJSON file, on the
// embedded SQLite default and on PostgreSQL, with the importing process's peak RSS at 100k and at N
// users (bounded memory: the two should match). Baseline in the same run: a process that only reads
// and parses the same file line by line, the floor any importer pays before touching a database.
// Usage: npm run bench:import [-- --users 1000000 --dialects sqlite,postgres] [--no-write]
import { createWriteStream } from 'node:fs';
import fs from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { numberArg } from './lib/bench-args.js';
import { commandLine, markdownTable, writeBenchmarkSection } from './lib/bench-report.js';
import { startProcess } from './lib/processes.js';

const USERS = numberArg('users', 1_000_000);
const SMALL = Math.min(100_000, USERS);
const dialectsAt = process.argv.indexOf('--dialects');
const DIALECTS = (dialectsAt > 0 ? process.argv[dialectsAt + 1]! : 'sqlite,postgres').split(',');
const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const HERALD = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'herald');

async function writeNdjson(file: string, count: number): Promise<void> {
  const out = createWriteStream(file);
  for (let i = 0; i < count; i++) {
    const line = `${JSON.stringify({ project_user_id: `user-${i}`, properties: { plan: i % 3 === 0 ? 'pro' : 'free', score: i % 100, vip: i % 7 === 0 } })}\n`;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

interface Run {
  seconds: number;
  /** User + system CPU seconds of the process (sampled every 100 ms until it exits). */
  cpuSeconds: number;
  peakRssMb: number;
  /** Peak RSS reached by 25, 50 and 75 % of the run's time: flat when memory is bounded. */
  peakRssByQuarter: number[];
  output: string;
}

/** Runs a node process to completion, sampling its peak RSS (VmHWM) just before it exits. */
async function runToEnd(args: string[], env: Record<string, string>): Promise<Run> {
  const started = performance.now();
  const proc = startProcess(args, { LOG_LEVEL: 'warn', ...env });
  let peak = 0;
  let cpu = 0;
  const samples: { at: number; peak: number }[] = [];
  const sampler = setInterval(() => {
    const rss = proc.peakRssMb();
    if (Number.isFinite(rss)) peak = Math.max(peak, rss);
    samples.push({ at: performance.now() - started, peak });
    const used = proc.cpuSeconds();
    if (Number.isFinite(used)) cpu = Math.max(cpu, used);
  }, 100);
  const [code] = (await once(proc.child, 'exit')) as [number | null];
  clearInterval(sampler);
  if (code !== 0) throw new Error(`${args.join(' ')} exited ${code}: ${proc.output().slice(-2000)}`);
  const elapsed = performance.now() - started;
  const peakRssByQuarter = [0.25, 0.5, 0.75].map((f) =>
    samples.reduce((max, s) => (s.at <= f * elapsed ? Math.max(max, s.peak) : max), 0),
  );
  return { seconds: elapsed / 1000, cpuSeconds: cpu, peakRssMb: peak, peakRssByQuarter, output: proc.output() };
}

async function databaseEnv(
  dialect: string,
  dir: string,
): Promise<{ env: Record<string, string>; drop(): Promise<void> }> {
  if (dialect === 'sqlite') return { env: { DATA_DIR: path.join(dir, 'data') }, drop: async () => {} };
  const schema = `bench_import_${process.pid}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`drop schema if exists ${schema} cascade`);
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const url = new URL(PG_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    env: { DATABASE_URL: url.toString() },
    async drop() {
      const cleanup = new pg.Client({ connectionString: PG_URL });
      await cleanup.connect();
      await cleanup.query(`drop schema if exists ${schema} cascade`);
      await cleanup.end();
    },
  };
}

async function importRun(env: Record<string, string>, file: string, count: number) {
  const project = await runToEnd([HERALD, 'project', 'create', '--name', `bench-${count}`, '--json'], env);
  // The last line: the CLI says on stderr first when it creates the data directory.
  const projectId = (JSON.parse(project.output.trim().split('\n').pop()!) as { project_id: string }).project_id;
  const run = await runToEnd([HERALD, 'users', 'import', '--project', projectId, '--file', file], env);
  const totals = JSON.parse(run.output.trim().split('\n').pop()!) as { created: number; failed: number };
  if (totals.created !== count || totals.failed !== 0) throw new Error(`unexpected totals ${run.output.slice(-500)}`);
  return run;
}

const PARSE_ONLY = `
import { createReadStream } from 'node:fs';
import readline from 'node:readline';
let n = 0;
for await (const line of readline.createInterface({ input: createReadStream(process.argv[1]), crlfDelay: Infinity }))
  if (line.trim() !== '') { JSON.parse(line); n++; }
process.stdout.write(String(n));
`;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-import-'));
try {
  const small = path.join(dir, 'small.ndjson');
  const large = path.join(dir, 'large.ndjson');
  await writeNdjson(small, SMALL);
  await writeNdjson(large, USERS);
  const sizeMb = Math.round(fs.statSync(large).size / 1e6);
  const baseline = await runToEnd(['--input-type=module', '-e', PARSE_ONLY, large], {});
  const row = (label: string, count: number, run: Run) => [
    label,
    count,
    run.seconds.toFixed(1),
    Math.round(count / run.seconds),
    run.cpuSeconds.toFixed(1),
    Math.round(count / run.cpuSeconds),
    run.peakRssMb,
  ];
  const rows = [row('read + JSON.parse only (baseline)', USERS, baseline)];
  const memory: string[] = [];
  const loadBefore = os.loadavg()[0]!.toFixed(1);
  for (const dialect of DIALECTS) {
    const database = await databaseEnv(dialect, dir);
    try {
      const runSmall = await importRun(database.env, small, SMALL);
      const runLarge = await importRun(database.env, large, USERS);
      rows.push(row(`herald users import, ${dialect}`, SMALL, runSmall));
      rows.push(row(`herald users import, ${dialect}`, USERS, runLarge));
      memory.push(
        `${dialect}: ${runSmall.peakRssMb} MB for ${SMALL} users; for ${USERS}, ${runLarge.peakRssByQuarter.join(', ')} and ${runLarge.peakRssMb} MB by 25, 50, 75 and 100 % of the run`,
      );
    } finally {
      await database.drop();
    }
  }
  const table = markdownTable(
    ['run', 'users', 'wall s', 'users/s (wall)', 'CPU s', 'users per CPU s', 'peak RSS MB'],
    rows,
  );
  const body = `Command: \`${commandLine('bench:import')}\` (each import is a \`bin/herald users import --project P file\` process into a fresh project, 3 properties per user, ${sizeMb} MB of NDJSON at ${USERS} users; the second import on each database goes into a table already holding the first's ${SMALL} users; wall times include process start and migrations; CPU is the importing process's user + system time (the database server's is not counted for PostgreSQL); peak RSS is the process's VmHWM; 2 cores shared with other work, 1-minute load average ${loadBefore} at the start and ${os.loadavg()[0]!.toFixed(1)} at the end, Node ${process.version}). Measured ${new Date().toISOString().slice(0, 10)}.

${table}

Peak RSS (VmHWM) of the importing process, and for the large import how it grew over the run (it holds one batch of 1,000 users at a time): ${memory.join('; ')}.`;
  console.log(body);
  if (!process.argv.includes('--no-write')) writeBenchmarkSection('Users import', body);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
