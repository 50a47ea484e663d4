// bench:campaign — broadcasts of 1k, 10k, 100k (and with --full 1M) users on the embedded default
// against the FCM stand-in, interleaved with a raw HTTP/2 send loop to the same stand-in.
// Usage: npm run bench:campaign [-- --full] [-- --sizes 1000,10000] [-- --rounds 3] [-- --heap-mb 256] [-- --compare-default-heap] [-- --no-write]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { commandLine, markdownTable, recordSummary, writeBenchmarkSection } from './lib/bench-report.js';
import { startProcess } from './lib/processes.js';
import { rawSendLoop, type ServiceAccount } from './campaign-raw-loop.js';

interface RunResult {
  size: number;
  heapMb: number;
  insertSeconds: number;
  triggerMs: number;
  dryRunMs: number;
  makespanMs: number;
  state: string;
  sends: number;
  devices: number;
  failed: Record<string, number>;
  sendsPerSec: number;
  rssBeforeMb: number;
  peakRssMb: number;
  peakHeapMb: number;
  usPerRecipient: number;
}

const flag = (name: string) => process.argv.includes(`--${name}`);
const sizesArg = process.argv.indexOf('--sizes');
const SIZES =
  sizesArg > 0
    ? process.argv[sizesArg + 1]!.split(',').map(Number)
    : [1_000, 10_000, 100_000, ...(flag('full') ? [1_000_000] : [])];
/**
 * Herald's heap cap in this benchmark (`--max-old-space-size`, as NODE_OPTIONS would set it). With a
 * cap this small V8 grows the heap about 2x the live set before collecting instead of about 4x, which
 * is what keeps the process's peak low; `--heap-mb 0` runs with Node's default.
 */
const heapArg = process.argv.indexOf('--heap-mb');
const HEAP_MB = heapArg > 0 ? Number(process.argv[heapArg + 1]) : 256;
const roundsArg = process.argv.indexOf('--rounds');
const ROUNDS = roundsArg > 0 ? Number(process.argv[roundsArg + 1]) : 3;
/** The raw loop sends this many at most per measurement (its rate is flat beyond a few thousand). */
const RAW_MAX = 100_000;

function child(args: string[]): Promise<string> {
  const proc = startProcess(args, {});
  return new Promise((resolve, reject) =>
    proc.child.on('exit', (code) =>
      code === 0 ? resolve(proc.output()) : reject(new Error(`${args.join(' ')} failed (${code}):\n${proc.output()}`)),
    ),
  );
}

/** One size: fill a fresh database in one process, then trigger and time the broadcast in another. */
async function runSize(size: number, fcmUrl: string, fakes: string, heapMb = HEAP_MB): Promise<RunResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-campaign-'));
  try {
    await child([
      '--import',
      'tsx',
      'bench/campaign-prepare.ts',
      '--size',
      String(size),
      '--dir',
      dir,
      '--fakes',
      fakes,
    ]);
    const out = await child([
      ...(heapMb > 0 ? [`--max-old-space-size=${heapMb}`] : []),
      '--expose-gc',
      '--import',
      'tsx',
      'bench/campaign-run.ts',
      '--dir',
      dir,
      '--fakes',
      fakes,
      '--fcm-url',
      fcmUrl,
    ]);
    const line = out.split('\n').find((l) => l.startsWith('{'));
    if (!line) throw new Error(`size ${size} printed no result:\n${out}`);
    return { size, heapMb, ...(JSON.parse(line) as Omit<RunResult, 'size' | 'heapMb'>) };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const loadBefore = os.loadavg()[0]!;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-fakes-'));
  const fake = startProcess(['--import', 'tsx', 'src/cli/main.ts', 'fake-providers', '--dir', dir], {
    LOG_LEVEL: 'silent',
  });
  try {
    const deadline = Date.now() + 30_000;
    while (!/FCM_API_URL=(\S+)/.test(fake.output()) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    const fcmUrl = /FCM_API_URL=(\S+)/.exec(fake.output())?.[1];
    if (!fcmUrl) throw new Error(`fake providers did not start:\n${fake.output()}`);
    const ca = fs.readFileSync(path.join(dir, 'ca.pem'), 'utf8');
    const serviceAccount = JSON.parse(
      fs.readFileSync(path.join(dir, 'fcm-service-account.json'), 'utf8'),
    ) as ServiceAccount;
    await rawSendLoop({ url: fcmUrl, ca, serviceAccount, count: 5_000 }); // warm-up

    const rows: Array<{ run: RunResult; raw: number }> = [];
    /**
     * One measurement: the raw loop right before and right after Herald's run (their mean is the
     * baseline), repeated `ROUNDS` times below 1M; the round with the median ratio is reported.
     * The machine is shared, so a single pair can be far off either way.
     */
    const measure = async (size: number, heapMb: number) => {
      const rounds: Array<{ run: RunResult; raw: number }> = [];
      for (let round = 0; round < (size >= 1_000_000 ? 1 : ROUNDS); round++) {
        const count = Math.min(size, RAW_MAX);
        const before = await rawSendLoop({ url: fcmUrl, ca, serviceAccount, count });
        const run = await runSize(size, fcmUrl, dir, heapMb);
        const after = await rawSendLoop({ url: fcmUrl, ca, serviceAccount, count });
        if (run.state !== 'completed') throw new Error(`size ${size}: ${JSON.stringify(run)}`);
        const raw = (before.sendsPerSec + after.sendsPerSec) / 2;
        console.log(JSON.stringify({ ...run, rawSendsPerSec: raw }));
        rounds.push({ run, raw });
      }
      rounds.sort((a, b) => a.run.sendsPerSec / a.raw - b.run.sendsPerSec / b.raw);
      const median = rounds[Math.floor(rounds.length / 2)]!;
      rows.push({
        run: { ...median.run, peakRssMb: Math.max(...rounds.map((r) => r.run.peakRssMb)) },
        raw: median.raw,
      });
    };
    for (const size of SIZES) await measure(size, HEAP_MB);
    // The largest size once more with Node's default heap, to show what the cap buys.
    if (flag('compare-default-heap') && HEAP_MB > 0) await measure(Math.max(...SIZES), 0);

    const fmt = (n: number, digits = 0) =>
      n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
    const failed = (r: RunResult) => Object.values(r.failed ?? {}).reduce((a, b) => a + b, 0);
    const table = markdownTable(
      [
        'users',
        'sends accepted',
        'failed',
        'trigger call ms',
        'dry-run count ms',
        'makespan s',
        'sends/s',
        'raw loop sends/s',
        'ratio',
        'peak RSS MB (idle)',
        'µs per recipient',
      ],
      rows.map(({ run, raw }) => [
        `${fmt(run.size)}${run.heapMb === HEAP_MB ? '' : ' (default heap)'}`,
        fmt(run.sends),
        failed(run),
        fmt(run.triggerMs, 1),
        fmt(run.dryRunMs, 0),
        fmt(run.makespanMs / 1000, 2),
        fmt(run.sendsPerSec),
        fmt(raw),
        (run.sendsPerSec / raw).toFixed(2),
        `${run.peakRssMb} (${run.rssBeforeMb})`,
        fmt(run.usPerRecipient, 1),
      ]),
    );
    const per = (size: number) => rows.find((r) => r.run.size === size && r.run.heapMb === HEAP_MB)?.run.usPerRecipient;
    const base = per(10_000);
    const spread =
      base === undefined
        ? ''
        : rows
            .filter((r) => r.run.size >= 10_000 && r.run.heapMb === HEAP_MB)
            .map((r) => `${fmt(r.run.size)}: ${(((r.run.usPerRecipient - base) / base) * 100).toFixed(0)}%`)
            .join(', ');
    const cost = (r: { run: RunResult; raw: number }) => r.raw / r.run.sendsPerSec;
    const baseRow = rows.find((r) => r.run.size === 10_000 && r.run.heapMb === HEAP_MB);
    const normalized = !baseRow
      ? ''
      : rows
          .filter((r) => r.run.size >= 10_000 && r.run.heapMb === HEAP_MB)
          .map(
            (r) =>
              `${fmt(r.run.size)}: ${cost(r).toFixed(2)} (${(((cost(r) - cost(baseRow)) / cost(baseRow)) * 100).toFixed(0)}%)`,
          )
          .join(', ');
    const report = [
      `Command: \`${commandLine('bench:campaign')}\`. Each size runs in a fresh process: Herald's API and job runner in process (as \`HERALD_ROLE=all\`, JOB_CONCURRENCY ${process.env.JOB_CONCURRENCY ?? 4}, ${HEAP_MB > 0 ? `\`--max-old-space-size=${HEAP_MB}\`` : 'default heap'}) on a new embedded SQLite file, the audience bulk-inserted (one FCM device per user, 90% of users in the segment \`plan eq pro\`, title and body personalised from user and trigger properties), then one \`:trigger\` broadcast, timed until the trigger is \`completed\`. The FCM stand-in (\`bin/herald fake-providers\`) is a separate process; the raw loop (bench/campaign-raw-loop.ts: one OAuth exchange, then POSTs over 2 HTTP/2 sessions x 100 streams, the shape of Herald's pool) sends min(size, ${fmt(RAW_MAX)}) messages to it right before and right after each Herald run (the mean is the baseline). Sizes below 1M run ${ROUNDS} rounds and report the round with the median ratio (peak RSS: the highest of the rounds). FCM quota raised so neither side is throttled. ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}, 1-minute load average at start ${loadBefore.toFixed(1)}. Measured ${new Date().toISOString().slice(0, 10)}.`,
      '',
      table,
      '',
      "The dry-run count is `:trigger?dry_run=true` for the broadcast (the segment query over every user, with device counts), run once the fan-out is done. Sends are counted by the trigger's own counters (`accepted`); sends/s = sends / makespan (trigger call to last outcome recorded); ratio = sends/s / raw loop sends/s. Peak RSS is the sampled peak of the Herald process during the fan-out (in brackets: its RSS idle before the trigger, mostly code). The audience is written by a separate process before Herald starts.",
      spread === '' ? '' : `Time per recipient relative to 10k: ${spread} (target within ±20%).`,
      normalized === ''
        ? ''
        : `The same in units of the raw loop's time per send measured alongside (1 / ratio), which factors out how busy the shared machine was during each run: ${normalized}.`,
      'Targets: ratio >= 0.6 at 100k; peak RSS < 300 MB at 1M; trigger call latency flat across sizes.',
    ].join('\n');
    console.log(report);
    if (!flag('no-write')) writeBenchmarkSection('Campaigns', report);
    for (const { run, raw } of rows)
      recordSummary({
        path: `campaign broadcast, ${fmt(run.size)} recipients${run.heapMb === HEAP_MB ? '' : ' (default heap)'}`,
        herald: `${fmt(run.sendsPerSec)} sends/s, peak RSS ${run.peakRssMb} MB`,
        baseline: `raw loop: ${fmt(raw)} sends/s`,
        ratio: run.sendsPerSec / raw,
        cpuRatio: null,
        target: run.size >= 100_000 ? 0.7 : null,
      });
  } finally {
    await fake.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
