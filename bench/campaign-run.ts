// bench:campaign, step 2 of a size: Herald's API and job runner in this process (as `HERALD_ROLE=all`)
// on the file bench/campaign-prepare.ts filled, one `:trigger` broadcast, timed until the trigger is
// finished. Prints one JSON line. The FCM stand-in is another process.
// Usage: node --import tsx bench/campaign-run.ts --dir DIR --fakes FAKES_DIR --fcm-url URL [--database-url URL]
//        (--database-url: PostgreSQL instead of the embedded file in DIR, as bench:campaign-policy runs it)
import fs from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import pino from 'pino';
import { residentByKind } from './lib/resident-memory.js';
import { countStatements } from './lib/statement-counter.js';
import '../src/campaigns/policies/send-log.repository.js';
import '../src/campaigns/triggers/triggers.repository.js';
import { loadConfig } from '../src/config.js';
import { createHerald } from '../src/herald.js';
import { unlimitedRateLimiter } from '../test/helpers/unlimited-rate-limiter.js';
import type { PreparedBench } from './campaign-prepare.js';

const arg = (name: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0 || process.argv[i + 1] === undefined) throw new Error(`--${name} is required`);
  return process.argv[i + 1]!;
};

/**
 * With CAMPAIGN_BENCH_PROFILE=file, a CPU profile of the fan-out only (startup excluded); with
 * CAMPAIGN_BENCH_ALLOC_PROFILE=file, a sampling profile of everything the fan-out allocates
 * (collected garbage included: what drives the heap's growth).
 */
async function startProfiler(file: string | undefined, allocFile: string | undefined) {
  if (!file && !allocFile) return undefined;
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  if (file) {
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  if (allocFile)
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 32768,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  return async () => {
    if (file) fs.writeFileSync(file, JSON.stringify((await session.post('Profiler.stop')).profile));
    if (allocFile)
      fs.writeFileSync(allocFile, JSON.stringify((await session.post('HeapProfiler.stopSampling')).profile));
    session.disconnect();
  };
}

/** Fan-out knobs for experiments (CAMPAIGN_BENCH_CHUNK, CAMPAIGN_BENCH_IN_FLIGHT, CAMPAIGN_BENCH_BATCH_USERS); the defaults are what Herald ships. */
function tuning(): { sendChunk?: number; chunksInFlight?: number; batchUsers?: number } {
  const n = (name: string) => (process.env[name] ? Number(process.env[name]) : undefined);
  return {
    ...(n('CAMPAIGN_BENCH_CHUNK') && { sendChunk: n('CAMPAIGN_BENCH_CHUNK') }),
    ...(n('CAMPAIGN_BENCH_IN_FLIGHT') && { chunksInFlight: n('CAMPAIGN_BENCH_IN_FLIGHT') }),
    ...(n('CAMPAIGN_BENCH_BATCH_USERS') && { batchUsers: n('CAMPAIGN_BENCH_BATCH_USERS') }),
  };
}

/**
 * CPU time (ms, user + system) of each of this process's threads, by name (`MainThread`, `WorkerThread`
 * for the render workers and the checkpointer, in start order, `V8Worker` for GC helpers, libuv's pool).
 */
function threadCpuMs(): Map<string, number> {
  const out = new Map<string, number>();
  const tick = 1000 / 100; // USER_HZ
  const tasks = fs.readdirSync('/proc/self/task').sort((a, b) => Number(a) - Number(b));
  const seen = new Map<string, number>();
  for (const tid of tasks) {
    try {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const fields = stat.slice(close + 2).split(' ');
      const n = (seen.get(comm) ?? 0) + 1;
      seen.set(comm, n);
      out.set(`${comm}#${n}`, (Number(fields[11]) + Number(fields[12])) * tick);
    } catch {
      // the thread ended
    }
  }
  return out;
}

/** Per-thread CPU over the fan-out, grouped (V8's GC helpers and libuv's pool summed). */
function threadCpuDelta(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, ms] of after) {
    const key = name.startsWith('V8Worker') ? 'V8Worker' : name.startsWith('libuv') ? 'libuv' : name;
    out[key] = (out[key] ?? 0) + ms - (before.get(name) ?? 0);
  }
  return out;
}

async function main(): Promise<void> {
  const dir = arg('dir');
  const prepared = JSON.parse(fs.readFileSync(path.join(dir, 'prepared.json'), 'utf8')) as PreparedBench;
  const databaseUrl = process.argv.includes('--database-url') ? arg('database-url') : undefined;
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    ...(databaseUrl && { DATABASE_URL: databaseUrl }),
    ...(process.env.JOB_CONCURRENCY && { JOB_CONCURRENCY: process.env.JOB_CONCURRENCY }),
    DATA_DIR: dir,
    HERALD_SECRET_KEY: '11'.repeat(32), // as campaign-prepare.ts sealed the credentials with
    FCM_API_URL: arg('fcm-url'),
    // The stand-in enforces no quota and neither does the raw loop; Herald's bucket must not either.
    FCM_QUOTA_PER_MINUTE: '100000000',
  });
  const herald = createHerald(config, {
    logger: pino({ level: 'silent' }),
    rateLimiter: unlimitedRateLimiter,
    push: { ca: fs.readFileSync(path.join(arg('fakes'), 'ca.pem'), 'utf8') },
    warmTemplates: true,
    fanout: tuning(),
  });
  const { database } = herald;
  const app = await herald.buildApp();
  const runner = herald.createJobRunner();
  await runner.start();
  global.gc?.();
  const rssBeforeMb = Math.round(process.memoryUsage.rss() / 1048576);

  const profiler = await startProfiler(process.env.CAMPAIGN_BENCH_PROFILE, process.env.CAMPAIGN_BENCH_ALLOC_PROFILE);
  let peakRss = process.memoryUsage.rss();
  let peakHeap = 0;
  // CAMPAIGN_BENCH_HEAP_SNAPSHOT_MB=N: one heap snapshot (into --dir) the first time the heap passes N MB.
  let snapshotAt = Number(process.env.CAMPAIGN_BENCH_HEAP_SNAPSHOT_MB ?? 0) * 1048576;
  // CAMPAIGN_BENCH_TRACE=file: one line of memory figures (MB) per second appended to file, to see what grows.
  const traceFile = process.env.CAMPAIGN_BENCH_TRACE;
  let tick = 0;
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    if (traceFile && tick++ % 20 === 0) {
      const mb = (bytes: number) => Math.round(bytes / 1048576);
      fs.appendFileSync(
        traceFile,
        `${Math.round(performance.now())} ms: rss ${mb(m.rss)} heapUsed ${mb(m.heapUsed)} heapTotal ${mb(m.heapTotal)} external ${mb(m.external)}${residentByKind()}\n`,
      );
    }
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
    if (snapshotAt > 0 && m.heapUsed > snapshotAt) {
      snapshotAt = 0;
      console.error(
        `heap snapshot: ${v8.writeHeapSnapshot(path.join(process.env.CAMPAIGN_BENCH_SNAPSHOT_DIR ?? dir, 'peak.heapsnapshot'))}`,
      );
    }
  }, 50);
  const headers = {
    'x-service-project-id': prepared.projectId,
    'x-service-api-key': prepared.secretKey,
    'content-type': 'application/json',
  };
  const campaignUrl = `/api/v1/campaigns/${prepared.campaignId}`;
  // Fastify loads its request injector on the first `inject`: load it now, so the trigger call is timed
  // as a client over the network would see it (no bench code on its path).
  await app.inject({ method: 'GET', url: '/healthz' });
  const statements = process.env.CAMPAIGN_BENCH_STATEMENTS ? countStatements() : undefined;
  const cpuBefore = process.cpuUsage();
  const threadsBefore = process.platform === 'linux' ? threadCpuMs() : undefined;
  const started = performance.now();
  const res = await app.inject({
    method: 'POST',
    url: `${campaignUrl}:trigger`,
    headers,
    payload: JSON.stringify({ audience: { broadcast: true }, properties: { code: 'SPRING' } }),
  });
  const triggerMs = performance.now() - started;
  if (res.statusCode !== 200) throw new Error(`trigger: ${res.statusCode} ${res.body}`);
  const triggerId = res.json<{ trigger_id: string }>().trigger_id;
  // A cheap look at the state only (the status endpoint sums every batch; polling it would cost the worker time).
  const stateOf = async () =>
    (
      await database.db
        .selectFrom('campaign_triggers')
        .select('state')
        .where('id', '=', triggerId)
        .executeTakeFirstOrThrow()
    ).state;
  while (!['completed', 'failed', 'canceled'].includes(await stateOf())) await new Promise((r) => setTimeout(r, 50));
  const makespanMs = performance.now() - started;
  // CPU of the whole process (every thread: event loop, render workers, libuv) over the fan-out.
  const cpu = process.cpuUsage(cpuBefore);
  const threads = threadsBefore && threadCpuDelta(threadsBefore, threadCpuMs());
  clearInterval(sampler);
  // One file per run (`FILE.PID`): a bench run starts several Herald processes.
  if (statements) fs.writeFileSync(`${process.env.CAMPAIGN_BENCH_STATEMENTS!}.${process.pid}`, statements());
  await profiler?.();
  const status = (await app.inject({ method: 'GET', url: `${campaignUrl}/triggers/${triggerId}`, headers })).json<{
    state: string;
    counters: {
      accepted: number;
      devices: number;
      failed: number;
      failed_by_status: Record<string, number>;
      skipped: Record<string, number>;
      held?: number;
    };
  }>();
  // Slots the send policy took for this trigger (rules `frequency-caps`, `re-eligibility`): none without a policy.
  const { slots } = await database.db
    .selectFrom('user_sends')
    .select((eb) => eb.fn.countAll<number>().as('slots'))
    .where('trigger_id', '=', triggerId)
    .executeTakeFirstOrThrow();
  // The segment query over the whole audience: a broadcast dry run (counts only), after the fan-out.
  const dryStarted = performance.now();
  const dry = await app.inject({
    method: 'POST',
    url: `${campaignUrl}:trigger?dry_run=true`,
    headers,
    payload: JSON.stringify({ audience: { broadcast: true }, properties: { code: 'SPRING' } }),
  });
  const dryRunMs = performance.now() - dryStarted;
  if (dry.statusCode !== 200) throw new Error(`dry run: ${dry.statusCode} ${dry.body}`);
  const sends = status.counters.accepted;
  global.gc?.();
  const heapAfterGcMb = Math.round(process.memoryUsage().heapUsed / 1048576);
  // The database after the fan-out: the audience, the trigger's ledger and delivery records (WAL included).
  const fileMb = (name: string) => (fs.existsSync(path.join(dir, name)) ? fs.statSync(path.join(dir, name)).size : 0);
  const dbMb = Math.round((fileMb('herald.sqlite') + fileMb('herald.sqlite-wal')) / 1048576);
  console.log(
    JSON.stringify({
      insertSeconds: prepared.insertSeconds,
      triggerMs,
      dryRunMs,
      makespanMs,
      state: status.state,
      sends,
      devices: status.counters.devices,
      failed: status.counters.failed_by_status,
      skipped: status.counters.skipped,
      held: status.counters.held ?? 0,
      slots: Number(slots),
      sendsPerSec: sends / (makespanMs / 1000),
      rssBeforeMb,
      peakRssMb: Math.round(peakRss / 1048576),
      peakHeapMb: Math.round(peakHeap / 1048576),
      heapAfterGcMb,
      dbMb,
      usPerRecipient: (makespanMs * 1000) / sends,
      cpuUsPerRecipient: (cpu.user + cpu.system) / sends,
      ...(threads && { threadCpuMs: threads }),
    }),
  );
  await runner.stop();
  await app.close();
  await herald.close();
}

await main();
