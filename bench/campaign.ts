// bench:campaign — broadcasts of 10k and 100k (and with --full 1M) users on the embedded default
// against the FCM stand-in, interleaved with the campaign floor and a raw HTTP/2 send loop to the same
// stand-in. The target is a ratio to the floor; the raw loop is context (what the sends alone cost).
// The floor (bench/campaign-floor.ts) is the same durable work with nothing else: in a fresh process
// started as Herald is (bin/herald's V8 flags, Node's type stripping) on a fresh database of Herald's
// schema, connection settings (WAL, synchronous = NORMAL) and checkpointer thread, the raw loop sends as
// many messages as the broadcast does (the segment's 90%) and records each as the fan-out does: a
// `deliveries` row and a `trigger_deliveries` ledger row (sorted by device, `on conflict do nothing
// returning`) with the SQLite rollup upsert, group-committed in one BEGIN IMMEDIATE transaction per group
// of GROUP_ROWS records or GROUP_LINGER_MS (src/campaigns/fanout/outcome-committer.ts), plain SQL through
// better-sqlite3 in Herald's statement sizes (bench/lib/floor-records.ts). It does not include: the
// trigger call, planning, batch jobs and their claims, the audience read (segment query, devices,
// recorded-device check), rendering, the batch close (counters, rollup fold), the OAuth token cache,
// quota and retry bookkeeping; nor does its database hold the audience (the tables it writes start empty).
// Usage: npm run bench:campaign [-- --full] [-- --sizes 10000,100000] [-- --rounds 3] [-- --large-rounds 1] [-- --before REF]
//        [-- --profile DIR] [-- --heap-mb 256] [-- --no-write]
//        CAMPAIGN_BENCH_MESSAGE=shared: the campaign's message reads no user property (rendered once per batch).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { commandLine, markdownTable, recordSummary, writeBenchmarkSection } from './lib/bench-report.js';
import { checkoutRef, heraldNodeFlags, heraldStartEnv } from './lib/herald-server.js';
import { startProcess } from './lib/processes.js';
import { rawSendLoop, type ServiceAccount } from './campaign-raw-loop.js';
import { loadConfig } from '../src/config.js';

/** Herald's default HTTP/2 pool, which the raw loop and the floor use too. */
const POOL = loadConfig({});

/** The campaign floor's result (bench/campaign-floor.ts). */
interface FloorResult {
  sends: number;
  seconds: number;
  sendsPerSec: number;
  cpuUsPerSend: number;
  dbMb: number;
}

interface RunResult {
  size: number;
  heapMb: number;
  /** Which Herald ran: this tree, or the `--before` ref. */
  variant: string;
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
  /** The database file (and its WAL) after the fan-out; absent from runs of refs older than it. */
  dbMb?: number;
  usPerRecipient: number;
  /** Herald's CPU time (all its threads) over the fan-out per send; absent from runs of older refs. */
  cpuUsPerRecipient?: number;
}

const flag = (name: string) => process.argv.includes(`--${name}`);
const sizesArg = process.argv.indexOf('--sizes');
const SIZES =
  sizesArg > 0
    ? process.argv[sizesArg + 1]!.split(',').map(Number)
    : [10_000, 100_000, ...(flag('full') ? [1_000_000] : [])];
/**
 * Herald runs with Node's default heap (what an operator gets); `--heap-mb N` caps it
 * (`--max-old-space-size`, as NODE_OPTIONS would) for experiments.
 */
const heapArg = process.argv.indexOf('--heap-mb');
const HEAP_MB = heapArg > 0 ? Number(process.argv[heapArg + 1]) : 0;
/** `--profile DIR`: CPU profiles of each Herald run (main thread and every render worker) go to DIR. */
const profileArg = process.argv.indexOf('--profile');
const PROFILE_DIR = profileArg > 0 ? path.resolve(process.argv[profileArg + 1]!) : undefined;
const roundsArg = process.argv.indexOf('--rounds');
const ROUNDS = roundsArg > 0 ? Number(process.argv[roundsArg + 1]) : 3;
/** Rounds at 100k users and more (`--large-rounds`, default 1): one such run lasts long enough to average itself. */
const largeRoundsArg = process.argv.indexOf('--large-rounds');
const LARGE_ROUNDS = largeRoundsArg > 0 ? Number(process.argv[largeRoundsArg + 1]) : 1;
const roundsAt = (size: number) => (size >= 1_000_000 ? 1 : size >= 100_000 ? LARGE_ROUNDS : ROUNDS);
/** `--before REF`: Herald at that git ref runs too, alternated with this tree, to show a change's effect. */
const beforeArg = process.argv.indexOf('--before');
/** The raw loop sends this many at most per measurement (its rate is flat beyond a few thousand). */
const RAW_MAX = 100_000;
const THIS_TREE = 'this tree';
/** Target: a broadcast at least this share of the campaign floor's sends/s, at each size. */
const TARGET = 0.8;
/** Recipients of a broadcast to `size` users: bench/campaign-prepare.ts puts every tenth user outside the segment. */
const segmentOf = (size: number) => size - Math.ceil(size / 10);

function child(args: string[], cwd?: string, env: Record<string, string> = {}): Promise<string> {
  const proc = startProcess(args, env, cwd);
  return new Promise((resolve, reject) =>
    proc.child.on('exit', (code) =>
      code === 0 ? resolve(proc.output()) : reject(new Error(`${args.join(' ')} failed (${code}):\n${proc.output()}`)),
    ),
  );
}

/** One size: fill a fresh database in one process, then trigger and time the broadcast in another. */
async function runSize(
  size: number,
  fcmUrl: string,
  fakes: string,
  variant: { name: string; cwd?: string | undefined },
): Promise<RunResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-campaign-'));
  const heapMb = HEAP_MB;
  try {
    await child(
      ['--import', 'tsx', 'bench/campaign-prepare.ts', '--size', String(size), '--dir', dir, '--fakes', fakes],
      variant.cwd,
    );
    const profile = PROFILE_DIR && path.join(PROFILE_DIR, `${size}${variant.cwd ? '-before' : ''}`);
    const out = await child(
      [
        ...(heapMb > 0 ? [`--max-old-space-size=${heapMb}`] : []),
        ...heraldNodeFlags(variant.cwd),
        ...(profile ? ['--cpu-prof', '--cpu-prof-dir', profile] : []),
        '--expose-gc',
        // As `bin/herald` runs Herald: Node strips the types itself (tsx would add its compiler's memory).
        '--import',
        './src/boot/ts-resolve.ts',
        'bench/campaign-run.ts',
        '--dir',
        dir,
        '--fakes',
        fakes,
        '--fcm-url',
        fcmUrl,
      ],
      variant.cwd,
      heraldStartEnv(variant.cwd),
    );
    const line = out.split('\n').find((l) => l.startsWith('{'));
    if (!line) throw new Error(`size ${size} printed no result:\n${out}`);
    return {
      size,
      heapMb,
      variant: variant.name,
      ...(JSON.parse(line) as Omit<RunResult, 'size' | 'heapMb' | 'variant'>),
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** One floor run of `count` sends, in a fresh process started as Herald's (campaign-run.ts) is: V8 flags and environment. */
async function runFloor(count: number, fcmUrl: string, fakes: string): Promise<FloorResult> {
  const out = await child(
    [
      ...heraldNodeFlags(),
      '--import',
      './src/boot/ts-resolve.ts',
      'bench/campaign-floor.ts',
      '--count',
      String(count),
      '--fakes',
      fakes,
      '--fcm-url',
      fcmUrl,
    ],
    undefined,
    heraldStartEnv(),
  );
  const line = out.split('\n').find((l) => l.startsWith('{'));
  if (!line) throw new Error(`the floor printed no result:\n${out}`);
  const floor = JSON.parse(line) as FloorResult;
  if (floor.sends !== count) throw new Error(`the floor sent ${floor.sends} of ${count}`);
  return floor;
}

async function main(): Promise<void> {
  const loadBefore = os.loadavg()[0]!;
  const ref = beforeArg > 0 ? checkoutRef(process.argv[beforeArg + 1]!) : undefined;
  // The ref runs with this tree's harness (same audience and measurements); only its Herald differs.
  if (ref)
    for (const file of ['campaign-run.ts', 'campaign-prepare.ts'])
      fs.copyFileSync(path.join('bench', file), path.join(ref.dir, 'bench', file));
  const variants = [
    ...(ref ? [{ name: `before (${ref.sha})`, cwd: ref.dir }] : []),
    { name: THIS_TREE, cwd: undefined },
  ];
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
    // One small unreported run per variant first: it fills the compile cache for the tree's sources
    // (as a server's first start does), so every measured run starts like a restarted server.
    for (const variant of variants) await runSize(1_000, fcmUrl, dir, variant);
    await runFloor(1_000, fcmUrl, dir); // the floor's compile cache too

    /** The floor's figures of a round: the mean of its run before and its run after Herald's. */
    type Floor = { sendsPerSec: number; cpuUsPerSend: number; dbMb: number };
    const rows: Array<{ run: RunResult; raw: number; floor: Floor }> = [];
    /**
     * One round: the raw loop and the floor, then each variant, then the floor and the raw loop again
     * (each pair's mean is the round's figure); `ROUNDS` rounds below 1M, one at 1M. Per variant the
     * round with the median ratio to the floor is reported. The machine is shared, so a single pair
     * can be far off either way.
     */
    const measure = async (size: number) => {
      const rounds: Array<{ runs: RunResult[]; raw: number; floor: Floor }> = [];
      for (let round = 0; round < roundsAt(size); round++) {
        const count = Math.min(size, RAW_MAX);
        const before = await rawSendLoop({ url: fcmUrl, ca, serviceAccount, count });
        const floorBefore = await runFloor(segmentOf(size), fcmUrl, dir);
        const runs: RunResult[] = [];
        for (const variant of round % 2 === 0 ? variants : [...variants].reverse())
          runs.push(await runSize(size, fcmUrl, dir, variant));
        const floorAfter = await runFloor(segmentOf(size), fcmUrl, dir);
        const after = await rawSendLoop({ url: fcmUrl, ca, serviceAccount, count });
        const raw = (before.sendsPerSec + after.sendsPerSec) / 2;
        const floor = {
          sendsPerSec: (floorBefore.sendsPerSec + floorAfter.sendsPerSec) / 2,
          cpuUsPerSend: (floorBefore.cpuUsPerSend + floorAfter.cpuUsPerSend) / 2,
          dbMb: floorAfter.dbMb,
        };
        for (const run of runs) {
          if (run.state !== 'completed') throw new Error(`size ${size}: ${JSON.stringify(run)}`);
          // The floor sends to every device of the segment, as many as the broadcast reaches.
          if (run.devices !== segmentOf(size))
            throw new Error(`size ${size}: ${run.devices} devices reached, the floor sent ${segmentOf(size)}`);
          console.log(
            JSON.stringify({
              ...run,
              rawSendsPerSec: raw,
              floorSendsPerSec: floor.sendsPerSec,
              floorCpuUsPerSend: floor.cpuUsPerSend,
              floorRounds: [floorBefore.sendsPerSec, floorAfter.sendsPerSec],
            }),
          );
        }
        rounds.push({ runs, raw, floor });
      }
      for (const variant of variants) {
        const mine = rounds
          .map((r) => ({ run: r.runs.find((x) => x.variant === variant.name)!, raw: r.raw, floor: r.floor }))
          .sort((a, b) => a.run.sendsPerSec / a.floor.sendsPerSec - b.run.sendsPerSec / b.floor.sendsPerSec);
        const median = mine[Math.floor(mine.length / 2)]!;
        rows.push({
          run: { ...median.run, peakRssMb: Math.max(...mine.map((r) => r.run.peakRssMb)) },
          raw: median.raw,
          floor: median.floor,
        });
      }
    };
    for (const size of SIZES) await measure(size);

    const fmt = (n: number, digits = 0) =>
      n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
    const failed = (r: RunResult) => Object.values(r.failed ?? {}).reduce((a, b) => a + b, 0);
    const table = markdownTable(
      [
        'users',
        ...(ref ? ['Herald'] : []),
        'sends accepted',
        'failed',
        'trigger call ms',
        'dry-run count ms',
        'makespan s',
        'sends/s',
        'floor sends/s',
        'ratio to floor',
        'raw loop sends/s',
        'ratio to raw loop',
        'peak RSS MB (idle)',
        'µs per recipient',
        'CPU µs per recipient',
        'floor CPU µs per send',
        'raw-loop sends per recipient',
        'database MB (floor)',
      ],
      rows.map(({ run, raw, floor }) => [
        fmt(run.size),
        ...(ref ? [run.variant] : []),
        fmt(run.sends),
        failed(run),
        fmt(run.triggerMs, 1),
        fmt(run.dryRunMs, 0),
        fmt(run.makespanMs / 1000, 2),
        fmt(run.sendsPerSec),
        fmt(floor.sendsPerSec),
        (run.sendsPerSec / floor.sendsPerSec).toFixed(2),
        fmt(raw),
        (run.sendsPerSec / raw).toFixed(2),
        `${run.peakRssMb} (${run.rssBeforeMb})`,
        fmt(run.usPerRecipient, 1),
        run.cpuUsPerRecipient === undefined ? '-' : fmt(run.cpuUsPerRecipient, 0),
        fmt(floor.cpuUsPerSend, 0),
        (raw / run.sendsPerSec).toFixed(2),
        `${run.dbMb === undefined ? '-' : fmt(run.dbMb)} (${fmt(floor.dbMb)})`,
      ]),
    );
    const mine = rows.filter((r) => r.run.variant === THIS_TREE);
    const cost = (r: { run: RunResult; raw: number }) => r.raw / r.run.sendsPerSec;
    const below = mine.filter((r) => r.run.sendsPerSec / r.floor.sendsPerSec < TARGET).map((r) => fmt(r.run.size));
    const smallest = mine[0];
    const curve =
      mine.length < 2 || !smallest
        ? ''
        : `Cost per recipient across sizes, relative to ${fmt(smallest.run.size)} (target: flat or falling): µs per recipient ${mine
            .map(
              (r) =>
                `${fmt(r.run.size)} ${(((r.run.usPerRecipient - smallest.run.usPerRecipient) / smallest.run.usPerRecipient) * 100).toFixed(0)}%`,
            )
            .join(', ')}; in raw-loop sends (factors out how busy the shared machine was) ${mine
            .map((r) => `${fmt(r.run.size)} ${(((cost(r) - cost(smallest)) / cost(smallest)) * 100).toFixed(0)}%`)
            .join(', ')}.`;
    const report = [
      `Command: \`${commandLine('bench:campaign')}\`. Each size runs in a fresh process: Herald's API and job runner in process (as \`HERALD_ROLE=all\`, started like \`bin/herald\`: Node's own type stripping with its compile cache warmed by an unreported 1,000-user run, JOB_CONCURRENCY ${process.env.JOB_CONCURRENCY ?? 4}, bin/herald's V8 defaults \`${heraldNodeFlags().join(' ')}\`${HEAP_MB > 0 ? ` and \`--max-old-space-size=${HEAP_MB}\`` : ''}) on a new embedded SQLite file, the audience bulk-inserted (one FCM device per user, 90% of users in the segment \`plan eq pro\`, ${process.env.CAMPAIGN_BENCH_MESSAGE === 'shared' ? 'a message that reads trigger and campaign properties only, so the same for every recipient (`CAMPAIGN_BENCH_MESSAGE=shared`)' : 'title and body personalised from user and trigger properties'}), then one \`:trigger\` broadcast, timed until the trigger is \`completed\`. The FCM stand-in (\`bin/herald fake-providers\`) is a separate process; the raw loop (bench/campaign-raw-loop.ts: one OAuth exchange, then POSTs over ${POOL.pushHttp2Sessions} HTTP/2 sessions x ${POOL.pushHttp2Streams} streams, the shape of Herald's pool) sends min(size, ${fmt(RAW_MAX)}) messages to it, and the campaign floor (bench/campaign-floor.ts, its own fresh process and database) sends as many as the broadcast does and records each as the fan-out does (a delivery row and a ledger row, group-committed in Herald's groups and statements on Herald's schema, WAL with \`synchronous = NORMAL\` and checkpointer; not the audience read, rendering, jobs or batch bookkeeping), right before (raw loop, then floor) and right after (floor, then raw loop) ${ref ? `each round's Herald runs (Herald at \`${ref.sha}\` "${ref.subject}" and this tree, alternating which goes first)` : 'each Herald run'} (each pair's mean is the round's figure). Sizes below 100k run ${ROUNDS} rounds, 100k ${LARGE_ROUNDS} and 1M one; of several rounds the one with the median ratio to the floor is reported (peak RSS: the highest of the rounds). FCM quota raised so neither side is throttled. ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}, 1-minute load average at start ${loadBefore.toFixed(1)}. Measured ${new Date().toISOString().slice(0, 10)}.`,
      '',
      table,
      '',
      "The dry-run count is `:trigger?dry_run=true` for the broadcast (the segment query over every user, with device counts), run once the fan-out is done. Sends are counted by the trigger's own counters (`accepted`); sends/s = sends / makespan (trigger call to last outcome recorded); the floor's sends/s = sends / (first POST to last commit); ratio to floor = sends/s / floor sends/s (the target); ratio to raw loop = sends/s / raw loop sends/s (context: the sends alone); raw-loop sends per recipient = 1 / that ratio. CPU µs per recipient is the Herald process's CPU time (all threads, user + system) over the fan-out per send: the figure the shared machine disturbs least; the floor's is its process's (all threads) per send. Peak RSS is the sampled peak of the Herald process during the fan-out (in brackets: its RSS idle before the trigger, mostly code). The database size is the SQLite file and its WAL after the fan-out (in brackets the floor's, which holds no audience). The audience is written by a separate process before Herald starts.",
      curve,
      `Targets: campaign broadcast >= ${TARGET} of the campaign floor at each size${below.length > 0 ? ` (not met at ${below.join(', ')})` : ''}, and >= 10,000 sends/s; peak RSS < 300 MB at 1M with default settings; trigger call < 50 ms at every size; cost per recipient flat or falling.`,
    ].join('\n');
    console.log(report);
    // A comparison with an earlier ref is printed only (its result goes into the History table by
    // hand), so it never replaces the scale curve.
    if (!ref && !flag('no-write')) writeBenchmarkSection('Campaigns', report);
    for (const { run, raw, floor } of mine)
      recordSummary({
        path: `campaign broadcast, ${fmt(run.size)} recipients`,
        herald: `${fmt(run.sendsPerSec)} sends/s, peak RSS ${run.peakRssMb} MB`,
        baseline: `campaign floor: ${fmt(floor.sendsPerSec)} sends/s (raw loop ${fmt(raw)})`,
        ratio: run.sendsPerSec / floor.sendsPerSec,
        cpuRatio: run.cpuUsPerRecipient === undefined ? null : floor.cpuUsPerSend / run.cpuUsPerRecipient,
        target: TARGET,
      });
  } finally {
    await fake.stop();
    fs.rmSync(dir, { recursive: true, force: true });
    ref?.remove();
  }
}

await main();
