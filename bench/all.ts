// npm run bench — every benchmark, one after the other, each writing its own section of
// docs/benchmarks.md, then a summary table of this run's headline rows (nothing else goes in it)
// and a row of the History table. From a tree with uncommitted changes it writes nothing.
// Sized to finish in under ten minutes on the 2-core machine. Usage: npm run bench [-- --quick]
// (--quick: shorter rounds, to try the orchestration; its figures are still real, just noisier).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SummaryRow } from './lib/bench-report.js';
import { addHistoryRow, markdownTable, measuredCommit, today, writeBenchmarkSection } from './lib/bench-report.js';

const quick = process.argv.includes('--quick');
const d = quick ? ['--duration', '2'] : ['--duration', '3'];
/** PostgreSQL variants: shorter rounds (still 3, alternated) so the whole run stays under ten minutes. */
const dp = ['--duration', '2'];
const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };

const steps: { script: string; args: string[] }[] = [
  { script: 'bench:users', args: d },
  { script: 'bench:a2a', args: d },
  // One and two instances in the same rounds, beside the PostgreSQL durable-write floor.
  { script: 'bench:users', args: [...dp, '--dialect', 'postgres', '--instances', '1,2'] },
  // Two A2A instances are context, not a target (the target is for one), and took a minute of the
  // ten: their own command, `npm run bench:a2a -- --dialect postgres --instances 2`.
  { script: 'bench:a2a', args: [...dp, '--dialect', 'postgres', '--instances', '1'] },
  { script: 'bench:push', args: ['--rounds', '3', '--sends', quick ? '2000' : '4000'] },
  // The scale curve at 10k (3 rounds) and 100k (one run); with 1M it takes longer than the whole
  // budget on 2 shared cores, so 1M is its own command: `npm run bench:campaign:scale`.
  { script: 'bench:campaign', args: ['--sizes', '10000,100000', '--rounds', '3'] },
  // Benchmarks other branches add run when their script exists (like npm's --if-present).
  // 50k users here; the 1M run alone takes minutes (`npm run bench:import`). The PostgreSQL
  // variant with rate limits in Redis is its own command too: `npm run bench:users -- --dialect postgres --redis`.
  { script: 'bench:import', args: ['--users', '50000'] },
  // The read-side benchmarks (bench:analytics, bench:console, bench:campaign-results) load a million
  // rows or more each: their own commands, so this run stays under ten minutes.
];

/** PostgreSQL's commit latency on this disk, measured now: what bounds a commit per request. */
function pgFsync(): string {
  const tool = ['/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin']
    .map((dir) => path.join(dir, 'pg_test_fsync'))
    .find((file) => fs.existsSync(file));
  if (!tool) return '';
  const out = spawnSync(tool, ['-s', '2', '-f', path.join(os.tmpdir(), `herald-fsync-${process.pid}`)], {
    encoding: 'utf8',
  }).stdout;
  const line = /fdatasync\s+([\d.]+) ops\/sec\s+(\d+) usecs\/op/.exec(out ?? '');
  return line
    ? `PostgreSQL commit latency on this disk at the start of the run (\`pg_test_fsync -s 2\`, fdatasync): ${Math.round(Number(line[1]))} ops/s, ${line[2]} µs per flush.`
    : '';
}
const fsyncLine = pgFsync();

const summaryFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-all-')), 'summary.jsonl');
const started = Date.now();
const ran: string[] = [];
const failed: string[] = [];
for (const step of steps) {
  if (!pkg.scripts[step.script]) continue;
  const command = `npm run ${step.script}${step.args.length > 0 ? ` -- ${step.args.join(' ')}` : ''}`;
  process.stdout.write(`\n=== ${command}\n`);
  const t0 = Date.now();
  const result = spawnSync('npm', ['run', step.script, '--', ...step.args], {
    stdio: 'inherit',
    env: { ...process.env, BENCH_SUMMARY_FILE: summaryFile },
  });
  const seconds = Math.round((Date.now() - t0) / 1000);
  (result.status === 0 ? ran : failed).push(`\`${command}\` (${seconds} s)`);
}

const rows = fs.existsSync(summaryFile)
  ? fs
      .readFileSync(summaryFile, 'utf8')
      .trim()
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as SummaryRow)
  : [];
const minutes = ((Date.now() - started) / 60_000).toFixed(1);
const summary = [
  `Command: \`npm run bench${quick ? ' -- --quick' : ''}\`, run ${today()} on commit \`${measuredCommit()}\`, ${minutes} minutes in all (Node ${process.version}, ${os.cpus().length} cores shared with other work). Every figure below comes from this run; each benchmark's own section has its method and rounds.`,
  '',
  markdownTable(
    ['path', 'Herald', 'baseline (same run)', 'ratio', 'CPU/req ratio', 'target', 'met?'],
    rows.map((r) => [
      r.path,
      r.herald,
      r.baseline,
      r.ratio.toFixed(2),
      r.cpuRatio === null ? '-' : r.cpuRatio.toFixed(2),
      r.target === null ? (r.targetNote ?? 'none yet') : `>= ${r.target}`,
      r.target === null ? '-' : r.ratio >= r.target ? 'yes' : 'no',
    ]),
  ),
  '',
  fsyncLine,
  '',
  `Steps run: ${ran.join(', ')}.`,
  failed.length > 0 ? `Steps that FAILED (no figures from them above): ${failed.join(', ')}.` : '',
].join('\n');
writeBenchmarkSection('Summary', summary, { first: true });
addHistoryRow([
  today(),
  measuredCommit(),
  `\`npm run bench${quick ? ' -- --quick' : ''}\``,
  rows.map((r) => `${r.path}: ${r.ratio.toFixed(2)}`).join('; ') +
    (failed.length > 0 ? `; failed: ${failed.join(', ')}` : ''),
]);
process.stdout.write(`\n${summary}\n`);
process.exit(failed.length > 0 ? 1 : 0);
