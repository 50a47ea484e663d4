// One audience size of bench:campaign, in a process of its own so its memory is its own. Herald runs
// in process (API + job runner, as `HERALD_ROLE=all` would) on a fresh embedded SQLite file; the FCM
// stand-in is another process. Prints one JSON line with the measurements.
// Usage: node --import tsx bench/campaign-run.ts --size N --fcm-url URL --dir DIR (ca.pem, fcm-service-account.json)
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pino from 'pino';
import { buildApp } from '../src/app.js';
import { createCampaignJobHandlers } from '../src/campaigns/campaign-fanout.job.js';
import '../src/campaigns/triggers.repository.js';
import { createCampaign } from '../src/campaigns/campaigns.service.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { createJobRunner } from '../src/jobs/jobs.js';
import { systemClock } from '../src/lib/clock.js';
import { createProject } from '../src/projects/projects.service.js';
import { setFcmCredentials } from '../src/push/credentials/credentials.service.js';
import { createPushRuntime } from '../src/push/push-runtime.js';
import { unlimitedRateLimiter } from '../src/rate-limit/unlimited.js';

const arg = (name: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0 || process.argv[i + 1] === undefined) throw new Error(`--${name} is required`);
  return process.argv[i + 1]!;
};
const size = Number(arg('size'));
const fakeDir = arg('dir');
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-campaign-'));
const sqliteFile = path.join(dataDir, 'herald.sqlite');

/** Users with one FCM device each, through a prepared statement in one transaction per 10,000. */
function insertAudience(projectId: string, n: number): void {
  const raw = new SQLite(sqliteFile);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = NORMAL');
  const user = raw.prepare('insert into users (id, project_id, project_user_id, properties, created_at, updated_at) values (?, ?, ?, ?, ?, ?)');
  const device = raw.prepare(
    "insert into devices (project_id, device_id, user_id, platform, provider, push_address, push_keys, status, disabled_reason, created_at, updated_at) values (?, ?, ?, 'android', 'fcm', ?, null, 'active', null, ?, ?)",
  );
  const at = Date.now() - 1000;
  const chunk = raw.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const id = randomUUID();
      user.run(id, projectId, `user-${i}`, JSON.stringify({ plan: i % 10 === 0 ? 'free' : 'pro', first_name: `Name${i}`, score: i % 100 }), at, at);
      device.run(projectId, randomUUID(), id, `bench${i}x${id.slice(0, 8)}`, at, at);
    }
  });
  for (let i = 0; i < n; i += 10_000) chunk(i, Math.min(n, i + 10_000));
  raw.pragma('wal_checkpoint(TRUNCATE)');
  raw.close();
}

/** With CAMPAIGN_BENCH_PROFILE=file, a CPU profile of the fan-out only (startup excluded). */
async function startProfiler(file: string | undefined): Promise<(() => Promise<void>) | undefined> {
  if (!file) return undefined;
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    fs.writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}

async function main(): Promise<void> {
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    DATA_DIR: dataDir,
    HERALD_SECRET_KEY: '11'.repeat(32),
    FCM_API_URL: arg('fcm-url'),
    // The stand-in enforces no quota and neither does the raw loop; Herald's bucket must not either.
    FCM_QUOTA_PER_MINUTE: '100000000',
  });
  const database = openDatabase({ sqliteFile });
  await migrateToLatest(database.db);
  const logger = pino({ level: 'silent' });
  const push = createPushRuntime(config, database, { ca: fs.readFileSync(path.join(fakeDir, 'ca.pem'), 'utf8'), logger });
  const project = await createProject(database.db, systemClock, 'bench');
  await setFcmCredentials(database.db, () => push.secretBox(), systemClock, project.project_id, JSON.parse(fs.readFileSync(path.join(fakeDir, 'fcm-service-account.json'), 'utf8')));
  const insertStarted = performance.now();
  insertAudience(project.project_id, size);
  const insertSeconds = (performance.now() - insertStarted) / 1000;
  // 90% of users are in the segment (plan = pro); the message reads a user property and a trigger property.
  const campaign = await createCampaign(database.db, systemClock, project.project_id, {
    name: 'bench',
    status: 'active',
    api_triggered: true,
    segment: { property: 'plan', op: 'eq', value: 'pro' },
    message: { title: 'Hi {{ user.first_name }}', body: 'Use {{ trigger.code }} today, {{ user.project_user_id }}' },
  });
  const app = await buildApp({ config, db: database.db, dialect: database.dialect, logger, clock: systemClock, rateLimiter: unlimitedRateLimiter, push });
  const runner = createJobRunner({
    db: database.db,
    dialect: database.dialect,
    logger,
    clock: systemClock,
    handlers: createCampaignJobHandlers({ push, clock: systemClock, logger }),
    concurrency: config.jobConcurrency,
    pollIntervalMs: 50,
    leaseMs: config.jobLeaseMs,
  });
  await runner.start();
  global.gc?.();
  const rssBeforeMb = Math.round(process.memoryUsage.rss() / 1048576);
  const heapBeforeMb = Math.round(process.memoryUsage().heapUsed / 1048576);

  const profiler = await startProfiler(process.env.CAMPAIGN_BENCH_PROFILE);
  let peakRss = process.memoryUsage.rss();
  let peakHeap = 0;
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  }, 50);
  const headers = { 'x-service-project-id': project.project_id, 'x-service-api-key': project.secret_key, 'content-type': 'application/json' };
  const started = performance.now();
  const res = await app.inject({ method: 'POST', url: `/api/v1/campaigns/${campaign.campaignId}:trigger`, headers, payload: JSON.stringify({ audience: { broadcast: true }, properties: { code: 'SPRING' } }) });
  const triggerMs = performance.now() - started;
  if (res.statusCode !== 200) throw new Error(`trigger: ${res.statusCode} ${res.body}`);
  const triggerId = (res.json() as { trigger_id: string }).trigger_id;
  // A cheap look at the state only (the status endpoint sums every batch, which costs the worker time at 1M).
  const stateOf = async () => (await database.db.selectFrom('campaign_triggers').select('state').where('id', '=', triggerId).executeTakeFirstOrThrow()).state;
  while (!['completed', 'failed', 'canceled'].includes(await stateOf())) await new Promise((r) => setTimeout(r, 50));
  const makespanMs = performance.now() - started;
  clearInterval(sampler);
  await profiler?.();
  const s = await app.inject({ method: 'GET', url: `/api/v1/campaigns/${campaign.campaignId}/triggers/${triggerId}`, headers });
  const status = s.json() as { state: string; counters: { accepted: number; devices: number; in_segment: number } };
  const sends = status.counters.accepted;
  console.log(
    JSON.stringify({ size, insertSeconds, triggerMs, makespanMs, state: status.state, sends, devices: status.counters.devices, sendsPerSec: sends / (makespanMs / 1000), peakRssMb: Math.round(peakRss / 1048576), rssBeforeMb, heapBeforeMb, peakHeapMb: Math.round(peakHeap / 1048576), usPerRecipient: (makespanMs * 1000) / sends }),
  );
  await runner.stop();
  await app.close();
  await push.close();
  await database.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

await main();
