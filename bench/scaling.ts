// npm run bench:scaling: the measured inputs of docs/scaling.md, on a fresh PostgreSQL database each.
//  1. Per send: a broadcast trigger to SEND_USERS users (one FCM device each, the stand-in in process),
//     run to completion by Herald's job runner; rows written (pg_stat_user_tables), bytes added
//     (pg_total_relation_size), transactions committed (pg_stat_database) and WAL written (this
//     database's records between the WAL positions before and after, read back with pg_walinspect),
//     divided by the sends. Per event the same, for EVENTS events sent through POST /api/v1/events
//     (16 at a time, to SEND_USERS users, each with three properties).
//  2. Per size (--sizes, default 1000000,10000000): users and devices generated in bulk with
//     generate_series, then the dry-run audience count (the broadcast count query, through the API)
//     and the fan-out plan (the `campaign.plan` job alone: keyset ranges and their batch jobs) timed.
//  3. Which tables have no project_id column (the sharding key a distributed PostgreSQL would use).
// Prints the report; `-- --write` puts it in docs/scaling.md ("Measured figures"). `--wal-compression
// lz4` (or any value of the setting) sets it on each fresh database (`alter database ... set`, so every
// connection Herald opens there compresses its full-page images), to size the WAL with it on.
// `--checkpoint-first` runs a CHECKPOINT once the counters are read, so every page a run touches
// writes its full-page image: the WAL of a run that straddles checkpoints, where a short run between
// two (PostgreSQL's default 5 minutes) writes almost none.
import os from 'node:os';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/connect.js';
import { postgresDialect } from '../src/db/dialect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { startFakeProviders } from '../src/fake-providers/fake-providers.js';
import { createHerald } from '../src/herald.js';
import { systemClock } from '../src/lib/clock.js';
import { createProject } from '../src/projects/projects.service.js';
import { setFcmCredentials } from '../src/push/credentials/credentials.service.js';
import { createSecretBox, resolveSecretKey } from '../src/crypto/secret-box.js';
import { runJobsUntilIdle } from '../test/helpers/run-jobs-until-idle.js';
import { unlimitedRateLimiter } from '../test/helpers/unlimited-rate-limiter.js';
import { markdownTable, SCALING_MD, writeBenchmarkSection } from './lib/bench-report.js';
import { seededUserId } from './lib/seed-ids.js';

const SERVER_URL =
  process.env.SCALING_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SECRET_KEY = '33'.repeat(32);
const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
};
const SEND_USERS = Number(arg('send-users', '5000'));
const EVENTS = Number(arg('events', '20000'));
// `--sizes none` measures per send and per event only.
const WAL_COMPRESSION = arg('wal-compression', '');
if (WAL_COMPRESSION !== '' && !/^[a-z0-9]+$/.test(WAL_COMPRESSION))
  throw new Error('--wal-compression: a setting value');
const CHECKPOINT_FIRST = process.argv.includes('--checkpoint-first');
const SIZES =
  arg('sizes', '1000000,10000000') === 'none' ? [] : arg('sizes', '1000000,10000000').split(',').map(Number);

async function query<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** A fresh database with Herald's schema, dropped by the returned function. */
async function freshDatabase(tag: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `herald_scaling_${tag}_${process.pid}`;
  await query(SERVER_URL, `create database ${name}`);
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  await query(url.toString(), 'create extension if not exists pg_walinspect');
  if (WAL_COMPRESSION !== '')
    await query(SERVER_URL, `alter database ${name} set wal_compression = ${WAL_COMPRESSION}`);
  const handle = openDatabase({ url: url.toString(), poolSize: 1 });
  await migrateToLatest(handle.db);
  await handle.close();
  return {
    url: url.toString(),
    drop: () => query(SERVER_URL, `drop database if exists ${name} with (force)`).then(() => undefined),
  };
}

/** Users `u1..uN` (90% `plan: pro`) with one active FCM device each, in bulk. */
async function generateAudience(url: string, projectId: string, n: number): Promise<number> {
  const started = performance.now();
  const at = Date.now() - 60_000;
  for (let from = 1; from <= n; from += 1_000_000) {
    const to = Math.min(n, from + 999_999);
    // Time-ordered ids, as Herald makes them (bench/lib/seed-ids.ts): random ones would spread the
    // primary key's inserts over every page and overstate its size.
    const ids = Array.from({ length: to - from + 1 }, (_, k) => seededUserId(from - 1 + k, n, at));
    await query(
      url,
      `insert into users (id, project_id, project_user_id, properties, created_at, updated_at)
       select id, $1, 'u' || g,
              jsonb_build_object('plan', case when g % 10 = 0 then 'free' else 'pro' end, 'score', g % 100, 'first_name', 'N' || g),
              $2, $2
       from (select id, ($3::int + o - 1)::int as g from unnest($4::text[]) with ordinality as t(id, o)) seeded`,
      [projectId, at, from, ids],
    );
  }
  await query(
    url,
    `insert into devices (project_id, device_id, user_id, platform, provider, push_address, push_keys, status, disabled_reason, created_at, updated_at)
     select project_id, gen_random_uuid()::text, id, 'android', 'fcm', 'tok' || project_user_id, null, 'active', null, created_at, created_at
     from users where project_id = $1`,
    [projectId],
  );
  await query(url, 'vacuum analyze users');
  await query(url, 'vacuum analyze devices');
  return (performance.now() - started) / 1000;
}

interface Counters {
  rows: number;
  bytes: number;
  commits: number;
  /** The server's WAL position flushed to disk (an LSN). */
  lsn: string;
}
async function counters(url: string): Promise<Counters> {
  const [t] = await query<{ rows: string; bytes: string }>(
    url,
    `select coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) as rows,
            coalesce(sum(pg_total_relation_size(relid)), 0) as bytes from pg_stat_user_tables`,
  );
  const [d] = await query<{ commits: string }>(
    url,
    'select xact_commit as commits from pg_stat_database where datname = current_database()',
  );
  const [w] = await query<{ lsn: string }>(url, 'select pg_current_wal_flush_lsn()::text as lsn');
  return { rows: Number(t!.rows), bytes: Number(t!.bytes), commits: Number(d!.commits), lsn: w!.lsn };
}

/**
 * WAL bytes this database wrote between two positions, read back with pg_walinspect: the records
 * that touch one of its relations, and the commit records of the transactions that wrote them. Other
 * databases on the server (tests, other runs) write WAL in the same stream; they are not counted. A
 * temporary replication slot keeps the segments until they are read.
 */
async function walOfDatabase(url: string, from: string, to: string): Promise<number> {
  const [row] = await query<{ bytes: string }>(
    url,
    `with mine as (
       select xid, record_length from pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)
       where block_ref like '%/' || (select oid from pg_database where datname = current_database()) || '/%'
     )
     select coalesce((select sum(record_length) from mine), 0)
          + coalesce((select sum(r.record_length) from pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn) r
                      where r.resource_manager = 'Transaction' and r.xid <> '0'::xid
                        and r.xid in (select xid from mine where xid <> '0'::xid)), 0) as bytes`,
    [from, to],
  );
  return Number(row!.bytes);
}
/** Keeps WAL from `lsn` on until released (a temporary physical slot that reserves at once). */
async function holdWal(url: string): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: url });
  // Ended by the database's drop when a run fails before releasing it.
  client.on('error', () => undefined);
  await client.connect();
  await client.query('select pg_create_physical_replication_slot($1, true, true)', [`herald_scaling_${process.pid}`]);
  return () => client.end();
}

/** The difference of two counter readings per unit of work, and the tables written most. */
async function perUnit(url: string, before: Counters, after: Counters, units: number) {
  const perTable = await query<{ relname: string; w: string; bytes: string }>(
    url,
    `select relname, n_tup_ins + n_tup_upd + n_tup_del as w, pg_total_relation_size(relid) as bytes
     from pg_stat_user_tables where n_tup_ins + n_tup_upd + n_tup_del > 0 order by w desc limit 8`,
  );
  return {
    rowsPer: (after.rows - before.rows) / units,
    bytesPer: (after.bytes - before.bytes) / units,
    commitsPer: (after.commits - before.commits) / units,
    walPer: (await walOfDatabase(url, before.lsn, after.lsn)) / units,
    perTable,
  };
}
/** Statistics reach the views when backends report them (at most every second while busy, or on idle). */
const settle = () => new Promise((r) => setTimeout(r, 2500));

async function heraldOn(url: string, fcmUrl: string, ca: string) {
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    DATABASE_URL: url,
    HERALD_SECRET_KEY: SECRET_KEY,
    FCM_API_URL: fcmUrl,
    FCM_QUOTA_PER_MINUTE: '100000000',
    // The count's duration is what is measured: at 10M users it comes near the 90 s default, which
    // a slower machine would turn into a 422 and no figure.
    REQUEST_TIMEOUT_MS: '900000',
    DATABASE_DRY_RUN_TIMEOUT_MS: '600000',
  });
  const herald = createHerald(config, {
    logger: pino({ level: 'silent' }),
    rateLimiter: unlimitedRateLimiter,
    push: { ca },
  });
  const project = await createProject(herald.db, systemClock, 'scaling');
  const box = createSecretBox(resolveSecretKey(config, postgresDialect));
  const sa = JSON.parse(JSON.stringify(fakesRef!.fcm.serviceAccount('scaling'))) as { token_uri: string };
  await setFcmCredentials(herald.db, () => box, systemClock, project.project_id, sa, {
    outbound: { allowPrivateNetworks: false },
    trustedOrigins: [new URL(sa.token_uri).origin],
    extraHosts: [],
  });
  const app = await herald.buildApp();
  const headers = {
    'x-service-project-id': project.project_id,
    'x-service-api-key': project.secret_key,
    'content-type': 'application/json',
  };
  const campaignRes = await app.inject({
    method: 'POST',
    url: '/api/v1/campaigns',
    headers,
    payload: JSON.stringify({
      name: 'scaling',
      status: 'active',
      api_triggered: true,
      segment: { property: 'plan', op: 'eq', value: 'pro' },
      message: { title: 'Hi {{ user.first_name }}', body: 'Code {{ trigger.code }}' },
    }),
  });
  const campaignId = campaignRes.json<{ campaign_id: string }>().campaign_id;
  const trigger = async (dryRun: boolean) => {
    const res = await app.inject({
      method: 'POST',
      url: `/api/v1/campaigns/${campaignId}:trigger${dryRun ? '?dry_run=true' : ''}`,
      headers,
      payload: JSON.stringify({ audience: { broadcast: true }, properties: { code: 'S1' } }),
    });
    if (res.statusCode !== 200) throw new Error(`trigger: ${res.statusCode} ${res.body}`);
    return res.json<Record<string, unknown>>();
  };
  const status = async (triggerId: string) =>
    (await app.inject({ method: 'GET', url: `/api/v1/campaigns/${campaignId}/triggers/${triggerId}`, headers })).json<{
      state: string;
      counters: { accepted: number; in_segment: number; failed: number };
    }>();
  let closed = false;
  /** Closes the app and Herald once (a run closes them early so its backends report their statistics). */
  const close = async () => {
    if (closed) return;
    closed = true;
    await app.close();
    await herald.close();
  };
  return { herald, app, project, headers, trigger, status, close };
}

let fakesRef: Awaited<ReturnType<typeof startFakeProviders>> | undefined;

async function perSend(fcmUrl: string, ca: string) {
  const db = await freshDatabase('send');
  const h = await heraldOn(db.url, fcmUrl, ca);
  try {
    await generateAudience(db.url, h.project.project_id, SEND_USERS);
    const runner = h.herald.createJobRunner();
    await runner.start();
    await settle();
    const releaseWal = await holdWal(db.url);
    const before = await counters(db.url);
    if (CHECKPOINT_FIRST) await query(db.url, 'checkpoint');
    const started = performance.now();
    const { trigger_id: triggerId } = (await h.trigger(false)) as { trigger_id: string };
    let s = await h.status(triggerId);
    while (s.state !== 'completed' && s.state !== 'failed') {
      await new Promise((r) => setTimeout(r, 200));
      s = await h.status(triggerId);
    }
    const seconds = (performance.now() - started) / 1000;
    await runner.stop();
    // A backend reports its table statistics when idle for a while or when it ends: close Herald's connections.
    await h.close();
    await settle();
    const after = await counters(db.url);
    const sends = s.counters.accepted;
    if (s.state !== 'completed' || s.counters.failed > 0) throw new Error(`send run: ${JSON.stringify(s)}`);
    const measured = await perUnit(db.url, before, after, sends);
    await releaseWal();
    return { sends, seconds, ...measured };
  } finally {
    await h.close();
    await db.drop();
  }
}

async function perEvent(fcmUrl: string, ca: string) {
  const db = await freshDatabase('event');
  const h = await heraldOn(db.url, fcmUrl, ca);
  try {
    await generateAudience(db.url, h.project.project_id, SEND_USERS);
    await settle();
    const releaseWal = await holdWal(db.url);
    const before = await counters(db.url);
    if (CHECKPOINT_FIRST) await query(db.url, 'checkpoint');
    let next = 0;
    const sender = async () => {
      for (let i = next++; i < EVENTS; i = next++) {
        const res = await h.app.inject({
          method: 'POST',
          url: '/api/v1/events',
          headers: h.headers,
          payload: JSON.stringify({
            project_user_id: `u${(i % SEND_USERS) + 1}`,
            name: i % 3 === 0 ? 'order_completed' : 'screen_viewed',
            properties: { total: i % 100, currency: 'EUR', screen: `s${i % 20}` },
          }),
        });
        if (res.statusCode >= 300) throw new Error(`event: ${res.statusCode} ${res.body}`);
      }
    };
    await Promise.all(Array.from({ length: 16 }, sender));
    await h.close();
    await settle();
    const after = await counters(db.url);
    const measured = await perUnit(db.url, before, after, EVENTS);
    await releaseWal();
    return { events: EVENTS, ...measured };
  } finally {
    await h.close();
    await db.drop();
  }
}

async function atSize(n: number, fcmUrl: string, ca: string) {
  const db = await freshDatabase(`s${n}`);
  const h = await heraldOn(db.url, fcmUrl, ca);
  try {
    const generateSeconds = await generateAudience(db.url, h.project.project_id, n);
    const [size] = await query<{ b: string }>(db.url, 'select pg_database_size(current_database()) as b');
    const dry: number[] = [];
    let counted: unknown;
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      counted = (await h.trigger(true)).counters;
      dry.push(performance.now() - t0);
    }
    const { trigger_id: triggerId } = (await h.trigger(false)) as { trigger_id: string };
    const t0 = performance.now();
    // The plan job alone: batch jobs it enqueues stay pending (no handler for them here).
    const plan = h.herald.jobHandlers['campaign.plan'];
    await runJobsUntilIdle(h.herald.db, { 'campaign.plan': plan });
    const planSeconds = (performance.now() - t0) / 1000;
    const [batches] = await query<{ n: string }>(
      db.url,
      'select count(*) as n from trigger_batches where trigger_id = $1',
      [triggerId],
    );
    return {
      users: n,
      generateSeconds,
      databaseBytes: Number(size!.b),
      dryRunMs: [...dry].sort((a, b) => a - b)[1]!,
      counted,
      planSeconds,
      batches: Number(batches!.n),
    };
  } finally {
    await h.close();
    await db.drop();
  }
}

async function tablesWithoutProject(): Promise<string[]> {
  const db = await freshDatabase('schema');
  try {
    const rows = await query<{ table_name: string }>(
      db.url,
      `select t.table_name from information_schema.tables t
       where t.table_schema = 'public' and t.table_type = 'BASE TABLE'
         and not exists (select 1 from information_schema.columns c
                         where c.table_schema = t.table_schema and c.table_name = t.table_name and c.column_name = 'project_id')
       order by 1`,
    );
    return rows.map((r) => r.table_name);
  } finally {
    await db.drop();
  }
}

async function main(): Promise<void> {
  const write = process.argv.includes('--write');
  fakesRef = await startFakeProviders();
  const ca = fakesRef.tls.caPem;
  try {
    const [version] = await query<{ v: string }>(SERVER_URL, "select current_setting('server_version') as v");
    const send = await perSend(fakesRef.fcm.url, ca);
    console.log(JSON.stringify({ send }));
    const event = await perEvent(fakesRef.fcm.url, ca);
    console.log(JSON.stringify({ event }));
    const sizes = [];
    for (const n of SIZES) {
      const result = await atSize(n, fakesRef.fcm.url, ca);
      console.log(JSON.stringify(result));
      sizes.push(result);
    }
    const noProject = await tablesWithoutProject();
    const mb = (b: number) => (b / 1048576).toFixed(0);
    const kib = (b: number) => (b / 1024).toFixed(2);
    const tables = (rows: { relname: string; w: string }[]) => rows.map((r) => `${r.relname} ${r.w}`).join(', ');
    const command = `npm run bench:scaling -- ${process.argv
      .slice(2)
      .filter((a) => a !== '--write')
      .join(' ')}`;
    const setting = `PostgreSQL ${version!.v} on this machine (${os.cpus().length} cores shared with other work, ${Math.round(os.totalmem() / 2 ** 30)} GB RAM, default server settings${WAL_COMPRESSION === '' ? '' : ` but \`wal_compression = ${WAL_COMPRESSION}\` on the measured database`}${CHECKPOINT_FIRST ? ', a CHECKPOINT right after the counters were read (every page touched writes its full-page image)' : ''}), Herald in process, the FCM stand-in in process. Measured ${new Date().toISOString().slice(0, 10)}.`;
    const report = [
      `Command: \`${command}\` (bench/scaling.ts). ${setting}`,
      '',
      `**Per send** (a broadcast to ${send.sends} users with one FCM device each, run to completion by one job runner; counters of the fresh database before and after, its WAL read back with pg_walinspect): ${send.rowsPer.toFixed(2)} rows written (inserts + updates + deletes), ${send.commitsPer.toFixed(3)} transactions committed, ${kib(send.bytesPer)} KiB of table and index size added, ${kib(send.walPer)} KiB of WAL written, per send. Rows written by table for the whole run: ${tables(send.perTable)} (users and devices are the bulk-generated audience). The same run's throughput on PostgreSQL, one process as API and worker (JOB_CONCURRENCY 4), trigger call to completion: ${(send.sends / send.seconds).toFixed(0)} sends/s.`,
      '',
      `**Per event** (${event.events} events through \`POST /api/v1/events\`, 16 at a time, for ${SEND_USERS} users, three properties each, no event-triggered campaign; measured the same way): ${event.rowsPer.toFixed(2)} rows written, ${event.commitsPer.toFixed(2)} transactions committed, ${kib(event.bytesPer)} KiB of table and index size added, ${kib(event.walPer)} KiB of WAL written, per event. Rows written by table for the whole run: ${tables(event.perTable)} (users and devices are the bulk-generated audience).`,
      '',
      `Tables without a \`project_id\` column: ${noProject.map((t) => `\`${t}\``).join(', ') || 'none'}.`,
    ].join('\n');
    const sizesReport = [
      `Command: \`${command}\` (bench/scaling.ts). ${setting}`,
      '',
      markdownTable(
        [
          'Users (bulk generated)',
          'Generate + index + analyze',
          'Database size',
          'Dry-run audience count (median of 3)',
          'Fan-out plan (campaign.plan job)',
          'Batches planned',
        ],
        sizes.map((s) => [
          s.users.toLocaleString('en'),
          `${s.generateSeconds.toFixed(0)} s`,
          `${mb(s.databaseBytes)} MB`,
          `${(s.dryRunMs / 1000).toFixed(2)} s`,
          `${s.planSeconds.toFixed(2)} s`,
          s.batches,
        ]),
      ),
    ].join('\n');
    console.log(report);
    if (sizes.length > 0) console.log(`\n${sizesReport}`);
    if (write) {
      writeBenchmarkSection('Measured figures', report, { file: SCALING_MD });
      // `--sizes none` leaves the sizes measured last in place.
      if (sizes.length > 0) writeBenchmarkSection('Measured figures: audience size', sizesReport, { file: SCALING_MD });
    }
  } finally {
    await fakesRef.close();
  }
}

await main();
