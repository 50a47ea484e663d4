// bench:event-triggers:lag (b): N pending sends (default 100,000) of an event-triggered campaign, due
// evenly over one minute, each for its own user with one FCM device; Herald's job runners (one
// process on SQLite, --instances of them on PostgreSQL) fire and send them to the FCM stand-in. Lag is,
// per pending send, its first recorded send minus its due time: p50, p99 and max.
// Usage: npm run bench:event-triggers:lag [-- --sends 100000 --dialect sqlite|postgres --instances 2 --no-write]
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { sql, type Insertable } from 'kysely';
import type { Database } from '../src/db/database.js';
import { createCampaign } from '../src/campaigns/campaigns.service.js';
import { enqueueDueJob } from '../src/campaigns/event-triggers/due-sends.js';
import { dueJobRunAt } from '../src/jobs/due-rows.js';
import { openDatabase } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { systemClock } from '../src/lib/clock.js';
import { createProject } from '../src/projects/projects.service.js';
import { setFcmCredentials } from '../src/push/credentials/credentials.service.js';
import { createSecretBox, resolveSecretKey } from '../src/crypto/secret-box.js';
import { loadConfig } from '../src/config.js';
import { numberArg } from './lib/bench-args.js';
import { commandLine, markdownTable, today, writeBenchmarkSection } from './lib/bench-report.js';
import { startProcess, type BenchProcess } from './lib/processes.js';

const SENDS = numberArg('sends', 100_000);
const dialectAt = process.argv.indexOf('--dialect');
const POSTGRES = dialectAt > 0 && process.argv[dialectAt + 1] === 'postgres';
const INSTANCES = POSTGRES ? numberArg('instances', 2) : 1;
const SECRET = '11'.repeat(32);
const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** Time to start the instances before the first send is due. */
const LEAD_MS = 20_000;

const waitFor = async (check: () => Promise<boolean> | boolean, what: string, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
};

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

async function main(): Promise<void> {
  const fakesDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-fakes-'));
  const fake = startProcess(['--import', 'tsx', 'src/cli/main.ts', 'fake-providers', '--dir', fakesDir], {
    LOG_LEVEL: 'silent',
  });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-lag-'));
  let dbName: string | undefined;
  let databaseUrl: string | undefined;
  if (POSTGRES) {
    dbName = `herald_bench_lag_${process.pid}`;
    const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${dbName}`);
    await admin.end();
    const url = new URL(PG_ADMIN_URL);
    url.pathname = `/${dbName}`;
    databaseUrl = url.toString();
  }
  const workers: BenchProcess[] = [];
  const database = openDatabase(
    databaseUrl ? { url: databaseUrl } : { sqliteFile: path.join(dataDir, 'herald.sqlite') },
  );
  const { db } = database;
  try {
    await waitFor(() => /FCM_API_URL=(\S+)/.test(fake.output()), 'the FCM stand-in', 30_000);
    const fcmUrl = /FCM_API_URL=(\S+)/.exec(fake.output())![1]!;
    await migrateToLatest(db);
    const project = await createProject(db, systemClock, 'bench');
    const config = loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir, HERALD_SECRET_KEY: SECRET });
    const box = createSecretBox(resolveSecretKey(config, database.dialect));
    const account = JSON.parse(fs.readFileSync(path.join(fakesDir, 'fcm-service-account.json'), 'utf8')) as {
      token_uri: string;
    };
    await setFcmCredentials(db, () => box, systemClock, project.project_id, account, {
      outbound: { allowPrivateNetworks: false },
      trustedOrigins: [new URL(account.token_uri).origin],
      extraHosts: [],
    });
    const campaign = await createCampaign(db, systemClock, project.project_id, {
      name: 'lag',
      status: 'active',
      event_trigger: { event: 'cart_abandoned', delay: 'PT1H' },
      message: { title: 'Back?', body: '{{ event.properties.items }} items, {{ user.project_user_id }}' },
    });
    const now = Date.now();
    const started = performance.now();
    for (let start = 0; start < SENDS; start += 500) {
      const users: Insertable<Database['users']>[] = [];
      const devices: Insertable<Database['devices']>[] = [];
      const sends: Insertable<Database['event_pending_sends']>[] = [];
      for (let i = start; i < Math.min(SENDS, start + 500); i++) {
        const id = randomUUID();
        users.push({
          id,
          project_id: project.project_id,
          project_user_id: `lag-${i}`,
          properties: '{}',
          created_at: now,
          updated_at: now,
        });
        devices.push({
          project_id: project.project_id,
          device_id: randomUUID(),
          user_id: id,
          platform: 'android' as const,
          provider: 'fcm' as const,
          push_address: `lag-${i}-${randomUUID()}`,
          push_keys: null,
          status: 'active' as const,
          disabled_reason: null,
          created_at: now,
          updated_at: now,
        });
        // An offset into the minute for now; the minute is placed once everything is inserted.
        const dueAt = Math.floor((i * 60_000) / SENDS);
        sends.push({
          id: randomUUID(),
          project_id: project.project_id,
          campaign_id: campaign.campaignId,
          user_id: id,
          event_id: randomUUID(),
          event_name: 'cart_abandoned',
          event_properties: JSON.stringify({ items: 2 }),
          event_timestamp: now,
          due_at: dueAt,
          state: 'pending' as const,
          reason: null,
          trigger_id: null,
          created_at: now,
          updated_at: now,
        });
      }
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('users').values(users).execute();
        await trx.insertInto('devices').values(devices).execute();
        await trx.insertInto('event_pending_sends').values(sends).execute();
      });
    }
    const insertSeconds = (performance.now() - started) / 1000;
    const firstDue = Date.now() + LEAD_MS;
    await sql`update event_pending_sends set due_at = due_at + ${firstDue}`.execute(db);
    for (let second = 0; second <= 61; second++)
      await enqueueDueJob(db, systemClock, dueJobRunAt(firstDue + second * 1000, Date.now()));
    for (let i = 0; i < INSTANCES; i++)
      workers.push(
        startProcess(['--import', './src/boot/ts-resolve.ts', 'bench/event-triggers-worker.ts'], {
          ...(databaseUrl ? { DATABASE_URL: databaseUrl } : { DATA_DIR: dataDir }),
          HERALD_SECRET_KEY: SECRET,
          FCM_API_URL: fcmUrl,
          FAKES_CA: path.join(fakesDir, 'ca.pem'),
        }),
      );
    for (const w of workers) await waitFor(() => w.output().includes('ready'), 'a worker', 60_000);
    const recorded = async () =>
      Number(
        (
          await sql<{
            n: number;
          }>`select count(*) as n from trigger_deliveries d join event_pending_sends p on p.trigger_id = d.trigger_id and p.user_id = d.user_id`.execute(
            db,
          )
        ).rows[0]!.n,
      );
    await waitFor(async () => (await recorded()) >= SENDS, `${SENDS} recorded sends`, 30 * 60_000);
    const rows = await sql<{ due_at: number; first: number; status: string }>`
      select p.due_at, min(d.created_at) as first, min(d.status) as status from event_pending_sends p
      join trigger_deliveries d on d.trigger_id = p.trigger_id and d.user_id = p.user_id group by p.id, p.due_at`.execute(
      db,
    );
    const lags = rows.rows.map((r) => Number(r.first) - Number(r.due_at)).sort((a, b) => a - b);
    const accepted = rows.rows.filter((r) => r.status === 'DELIVERY_RESULT_STATUS_ACCEPTED').length;
    const lastSend = Math.max(...rows.rows.map((r) => Number(r.first)));
    const store = POSTGRES ? `PostgreSQL, ${INSTANCES} instances` : 'embedded SQLite, 1 instance';
    const report = [
      `Command: \`${commandLine('bench:event-triggers:lag')}\`, run ${today()} (Node ${process.version}, ${os.cpus().length} cores shared with the FCM stand-in and other work).`,
      '',
      `${SENDS} pending sends due evenly over one minute (each its own user with one FCM device; inserted directly, with their per-second due jobs, in ${insertSeconds.toFixed(1)} s), on ${store}; Herald's job runners (\`createJobRunner\` as \`HERALD_ROLE=worker\` runs it, one process per instance) fire them and send to the FCM stand-in. Lag = the pending send's first recorded send minus its due time.`,
      '',
      markdownTable(
        ['store', 'sends', 'accepted', 'lag p50 s', 'lag p99 s', 'lag max s', 'last send after the last due, s'],
        [
          [
            store,
            SENDS,
            accepted,
            (percentile(lags, 0.5) / 1000).toFixed(1),
            (percentile(lags, 0.99) / 1000).toFixed(1),
            (lags[lags.length - 1]! / 1000).toFixed(1),
            ((lastSend - (firstDue + 60_000)) / 1000).toFixed(1),
          ],
        ],
      ),
    ].join('\n');
    console.log(report);
    if (!process.argv.includes('--no-write'))
      writeBenchmarkSection(`Event-triggered sends: due-time lag (${store})`, report);
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await fake.stop();
    await database.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(fakesDir, { recursive: true, force: true });
    if (dbName) {
      const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await admin.end();
    }
  }
}

await main();
