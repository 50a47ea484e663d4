// bench:campaign-policy — the send policy's cost: one broadcast with every gate on (10 frequency-cap
// rules, a subscription topic, quiet hours with now outside the window, a re-eligibility window, a
// send-rate limit that does not throttle) against the same broadcast with none, on SQLite and on
// PostgreSQL, in alternating rounds; then, with --memory, Herald's peak RSS through a gated broadcast.
// Each run is a fresh database (bench/campaign-policy-prepare.ts) and a fresh Herald process
// (bench/campaign-run.ts, as bench:campaign runs it) sending to the FCM stand-in.
// Usage: npm run bench:campaign-policy [-- --size 100000] [-- --rounds 3] [-- --dialects sqlite,postgres]
//        [-- --rate-limit 1000000 (0: none)] [-- --memory 1000000 --dialects sqlite] [-- --no-write]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { median, numberArg } from './lib/bench-args.js';
import { commandLine, markdownTable, writeBenchmarkSection } from './lib/bench-report.js';
import { heraldNodeFlags, heraldStartEnv } from './lib/herald-server.js';
import { startProcess } from './lib/processes.js';

type Dialect = 'sqlite' | 'postgres';
type Side = 'none' | 'every gate';

interface Run {
  side: Side;
  sends: number;
  sendsPerSec: number;
  cpuUsPerRecipient: number;
  makespanMs: number;
  peakRssMb: number;
  rssBeforeMb: number;
  state: string;
  held: number;
  slots: number;
  skipped: Record<string, number>;
  failed: Record<string, number>;
}

const MEMORY = numberArg('memory', 0);
const SIZE = MEMORY > 0 ? MEMORY : numberArg('size', 100_000);
const ROUNDS = MEMORY > 0 ? 1 : numberArg('rounds', 3);
const RATE_LIMIT = numberArg('rate-limit', 1_000_000);
const dialectsAt = process.argv.indexOf('--dialects');
const DIALECTS = (
  dialectsAt > 0 ? process.argv[dialectsAt + 1]!.split(',') : MEMORY > 0 ? ['sqlite'] : ['sqlite', 'postgres']
) as Dialect[];
const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

function child(args: string[], env: Record<string, string> = {}): Promise<string> {
  const proc = startProcess(args, env);
  return new Promise((resolve, reject) =>
    proc.child.on('exit', (code) =>
      code === 0 ? resolve(proc.output()) : reject(new Error(`${args.join(' ')} failed (${code}):\n${proc.output()}`)),
    ),
  );
}

async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** One run: a fresh database filled for `side`, then one broadcast in a fresh Herald process. */
async function runOnce(dialect: Dialect, side: Side, size: number, fcmUrl: string, fakes: string): Promise<Run> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-policy-'));
  const dbName = `herald_bench_policy_${process.pid}_${Date.now()}`;
  let databaseUrl: string | undefined;
  if (dialect === 'postgres') {
    await admin(`create database ${dbName}`);
    const url = new URL(PG_ADMIN_URL);
    url.pathname = `/${dbName}`;
    databaseUrl = url.toString();
  }
  const db = databaseUrl ? ['--database-url', databaseUrl] : [];
  try {
    await child([
      '--import',
      'tsx',
      'bench/campaign-policy-prepare.ts',
      ...['--size', String(size), '--dir', dir, '--fakes', fakes, '--rate-limit', String(RATE_LIMIT)],
      ...['--policy', side === 'none' ? 'off' : 'on', ...db],
    ]);
    const out = await child(
      [
        ...heraldNodeFlags(),
        '--expose-gc',
        '--import',
        './src/boot/ts-resolve.ts',
        'bench/campaign-run.ts',
        ...['--dir', dir, '--fakes', fakes, '--fcm-url', fcmUrl, ...db],
      ],
      heraldStartEnv(),
    );
    const line = out.split('\n').find((l) => l.startsWith('{'));
    if (!line) throw new Error(`${dialect} ${side} printed no result:\n${out}`);
    return { side, ...(JSON.parse(line) as Omit<Run, 'side'>) };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    if (databaseUrl) await admin(`drop database if exists ${dbName} with (force)`);
  }
}

/**
 * Both sides must have sent the same broadcast: nobody held or skipped by a gate, and (a loaded machine
 * may time out a render or two) at least 99.9% of the recipients accepted; the gated side holds one
 * send-log slot per send.
 */
const POLICY_SKIPS = ['unsubscribed', 'frequency_capped', 'not_reeligible'];
function check(run: Run, dialect: Dialect, size: number): void {
  const expected = size - size / 10;
  const gated = POLICY_SKIPS.reduce((n, reason) => n + (run.skipped[reason] ?? 0), 0);
  const slots = run.side === 'none' ? 0 : run.sends;
  if (run.state !== 'completed' || run.sends < expected * 0.999 || run.held > 0 || gated > 0 || run.slots !== slots)
    throw new Error(`${dialect} ${run.side}: not the broadcast expected (${expected} sends): ${JSON.stringify(run)}`);
}

async function main(): Promise<void> {
  const loadBefore = os.loadavg()[0]!;
  const fakes = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-fakes-'));
  const fake = startProcess(['--import', 'tsx', 'src/cli/main.ts', 'fake-providers', '--dir', fakes], {
    LOG_LEVEL: 'silent',
  });
  try {
    const deadline = Date.now() + 30_000;
    while (!/FCM_API_URL=(\S+)/.test(fake.output()) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    const fcmUrl = /FCM_API_URL=(\S+)/.exec(fake.output())?.[1];
    if (!fcmUrl) throw new Error(`fake providers did not start:\n${fake.output()}`);
    // One small unreported run first: it fills the compile cache (as a server's first start does).
    await runOnce('sqlite', 'every gate', 1_000, fcmUrl, fakes);

    const fmt = (n: number, digits = 0) =>
      n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
    const rows: (string | number)[][] = [];
    for (const dialect of DIALECTS) {
      const rounds: Array<Record<Side, Run>> = [];
      for (let round = 0; round < ROUNDS; round++) {
        const sides: Side[] =
          MEMORY > 0 ? ['every gate'] : round % 2 === 0 ? ['none', 'every gate'] : ['every gate', 'none'];
        const got = {} as Record<Side, Run>;
        for (const side of sides) {
          const run = await runOnce(dialect, side, SIZE, fcmUrl, fakes);
          check(run, dialect, SIZE);
          console.log(JSON.stringify({ dialect, round, ...run }));
          got[side] = run;
        }
        rounds.push(got);
      }
      if (MEMORY > 0) {
        const run = rounds[0]!['every gate'];
        rows.push([
          dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL',
          fmt(run.sends),
          fmt(run.makespanMs / 1000, 1),
          fmt(run.sendsPerSec),
          fmt(run.cpuUsPerRecipient),
          `${run.peakRssMb} (${run.rssBeforeMb})`,
        ]);
        continue;
      }
      const side = (s: Side) => rounds.map((r) => r[s]);
      const ratios = rounds.map((r) => r['every gate'].sendsPerSec / r.none.sendsPerSec);
      const cpuRatios = rounds.map((r) => r.none.cpuUsPerRecipient / r['every gate'].cpuUsPerRecipient);
      for (const s of ['none', 'every gate'] as Side[])
        rows.push([
          dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL',
          s,
          fmt(median(side(s).map((r) => r.sendsPerSec))),
          side(s)
            .map((r) => fmt(r.sendsPerSec))
            .join(', '),
          fmt(median(side(s).map((r) => r.cpuUsPerRecipient))),
          Math.max(...side(s).map((r) => r.peakRssMb)),
          s === 'none' ? '' : `${median(ratios).toFixed(2)} (${ratios.map((x) => x.toFixed(2)).join(', ')})`,
          s === 'none' ? '' : median(cpuRatios).toFixed(2),
        ]);
    }
    const setup = `Each run is a fresh database (an embedded SQLite file, or a new PostgreSQL database on the local server) holding ${fmt(SIZE)} users with one FCM device each (90% in the segment \`plan eq pro\`; user zones UTC-1 to UTC+2), explicit topic and campaign-push preferences for 30% of them and 0 to 3 earlier sends per user in the send log (the same for both sides), then one \`:trigger\` broadcast in a fresh Herald process (bench/campaign-run.ts, as bench:campaign runs it: API and job runner in process, JOB_CONCURRENCY ${process.env.JOB_CONCURRENCY ?? 4}, bin/herald's V8 defaults), timed until the trigger is \`completed\`, sending to the FCM stand-in (\`bin/herald fake-providers\`). **Every gate**: 10 project frequency-cap rules (calendar day and week in the user's zone and rolling minutes and hours; 4 of them per tag) all applying to the campaign (tags \`promo\`, \`spring\`), none reached; the campaign names a topic every user is subscribed to (by default or explicitly); project quiet hours and a do-not-disturb window for 10% of users, both hours away from now in every user's zone; re-eligibility once per 7 days (the campaign's own earlier send is 8 days old); ${RATE_LIMIT > 0 ? `\`max_sends_per_minute\` ${fmt(RATE_LIMIT)} (the highest allowed)` : 'no send-rate limit'}. **None**: the same audience and campaign with no caps, topic, quiet hours, re-eligibility or rate limit. Both sides send every recipient (checked: all accepted, none held or skipped; the gated side holds one send-log slot per send). ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}, 1-minute load average at start ${loadBefore.toFixed(1)} (the machine was shared with other work). Measured ${new Date().toISOString().slice(0, 10)}.`;
    const report =
      MEMORY > 0
        ? [
            `Command: \`${commandLine('bench:campaign-policy')}\`. ${setup}`,
            '',
            markdownTable(
              ['database', 'sends', 'makespan s', 'sends/s', 'CPU µs per send', 'peak RSS MB (idle)'],
              rows,
            ),
            '',
            "Peak RSS is the sampled peak of the Herald process during the fan-out (in brackets: its RSS idle before the trigger, mostly code). Target: < 300 MB at 1M recipients with every gate on, Node's default heap.",
          ].join('\n')
        : [
            `Command: \`${commandLine('bench:campaign-policy')}\`. ${setup} ${ROUNDS} rounds per database, alternating which side goes first; each figure is the median of the rounds, the ratio the median of the rounds' own ratios.`,
            '',
            markdownTable(
              [
                'database',
                'policy',
                'sends/s (median)',
                'rounds',
                'CPU µs per send',
                'peak RSS MB',
                'sends/s ratio, every gate / none (rounds)',
                'CPU ratio, none / every gate',
              ],
              rows,
            ),
            '',
            "sends/s = the trigger's accepted sends / makespan (trigger call to completion). CPU µs per send is the Herald process's CPU time (all threads) over the fan-out per send, the figure a busy machine disturbs least; CPU ratio 1 = the gates cost nothing. Target: sends/s ratio >= 0.85 on both databases.",
          ].join('\n');
    console.log(report);
    if (!process.argv.includes('--no-write'))
      writeBenchmarkSection(
        MEMORY > 0 ? 'Campaign send policy: memory' : 'Campaign send policy: cost of the gates',
        report,
      );
  } finally {
    await fake.stop();
    fs.rmSync(fakes, { recursive: true, force: true });
  }
}

await main();
