// bench:analytics: the delivery analytics queries over a bulk-generated ledger on both
// databases. Per dialect: a fresh migrated database, one campaign whose trigger has N deliveries
// spread over an hour (90% accepted, the rest unregistered, failed or render-skipped, three
// providers), plus a second campaign's trigger with N/5 rows so the index has neighbours to skip.
// Each query runs once to warm up, then `--runs` times; the median and slowest are reported.
// Usage: npm run bench:analytics -- [--deliveries 1000000] [--runs 7] [--dialects sqlite,postgres] [--no-write]
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { sql } from 'kysely';
import { createCampaign } from '../src/campaigns/campaigns.service.js';
import { foldDeliveryCounts } from '../src/campaigns/analytics/delivery-analytics.repository.js';
import { campaignAnalytics, triggerAnalytics } from '../src/campaigns/analytics/delivery-analytics.service.js';
import { insertTrigger } from '../src/campaigns/triggers/triggers.repository.js';
import type { Db } from '../src/db/database.js';
import { dialectOf, type Dialect } from '../src/db/dialect.js';
import { systemClock } from '../src/lib/clock.js';
import { createProject } from '../src/projects/projects.service.js';
import { createTestDatabase } from '../test/helpers/test-db.js';
import { median, numberArg } from './lib/bench-args.js';
import { commandLine, markdownTable, writeBenchmarkSection } from './lib/bench-report.js';

const deliveries = numberArg('deliveries', 1_000_000);
const runs = numberArg('runs', 7);
const dialectsArg = process.argv.indexOf('--dialects');
const dialects = (dialectsArg > 0 ? process.argv[dialectsArg + 1]! : 'sqlite,postgres').split(',') as Dialect[];
const START = Date.UTC(2026, 10, 1, 9, 0, 0);
const HOUR = 3_600_000;
const rollups: string[] = [];

async function newTrigger(db: Db, projectId: string, campaignId: string): Promise<string> {
  const id = randomUUID();
  await insertTrigger(db, {
    id,
    projectId,
    campaignId,
    definition: { campaignName: campaignId, segment: null, audienceConditions: null, message: { title: 'x' } },
    audience: { broadcast: true },
    properties: {},
    targets: 0,
    createdAt: START,
  });
  return id;
}

/**
 * `n` ledger rows for the trigger, generated inside the database (a series per dialect). On
 * PostgreSQL 100 rows per statement, as the fan-out records them, because its rollup gains one
 * partial row per group per statement (what the reads then sum); on SQLite the rollup is
 * added once at the end, as exact as the fan-out's per-group upserts.
 */
async function fillLedger(db: Db, triggerId: string, n: number): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const step = pg ? 100 : 100_000;
  for (let from = 0; from < n; from += step) {
    // The fan-out folds the rollup after each batch (400 users, here 400 rows) closes.
    if (from > 0 && from % 400 === 0) await foldDeliveryCounts(db, triggerId);
    const to = Math.min(n, from + step) - 1;
    const series = pg
      ? sql`(select generate_series(${from}::int, ${to}::int) as i) s`
      : sql`(with recursive seq(i) as (select ${from} union all select i + 1 from seq where i < ${to}) select i from seq) s`;
    await sql`insert into trigger_deliveries
        (trigger_id, device_id, batch_no, user_id, status, message_id, failure_reason, token_action, detail, provider, created_at)
      select ${triggerId}, 'd' || i, i / 400, 'u' || i,
        case when i % 100 < 90 then 'DELIVERY_RESULT_STATUS_ACCEPTED'
             when i % 100 < 95 then 'DELIVERY_RESULT_STATUS_TOKEN_UNREGISTERED'
             when i % 100 < 98 then 'DELIVERY_RESULT_STATUS_FAILED'
             else 'DELIVERY_RESULT_STATUS_SKIPPED' end,
        case when i % 100 < 98 then 'm' || i end,
        case when i % 100 < 90 then null when i % 100 < 95 then 'UNREGISTERED'
             when i % 100 < 98 then 'UNAVAILABLE' else 'TEMPLATE_RENDER_ERROR' end,
        case when i % 100 >= 90 and i % 100 < 95 then 'removed' end,
        null,
        case i % 3 when 0 then 'fcm' when 1 then 'apns' else 'webpush' end,
        ${sql.lit(START)} + (cast(i as bigint) * ${sql.lit(HOUR)}) / ${sql.lit(n)}
      from ${series}`.execute(db);
  }
  // On SQLite the fan-out adds the rollup itself as it records (recordDeliveries; migration 0017
  // dropped the row trigger), so rows written straight into the ledger get theirs here, all at once.
  if (!pg) {
    await sql`insert into trigger_delivery_counts (trigger_id, minute, status, provider, reason, n)
      select trigger_id, (created_at / 60000) * 60000, status, coalesce(provider, ''), coalesce(failure_reason, ''), count(*)
      from trigger_deliveries where trigger_id = ${triggerId} group by 1, 2, 3, 4, 5`.execute(db);
  }
}

async function time(fn: () => Promise<unknown>): Promise<{ median: number; max: number }> {
  await fn();
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  return { median: median(ms), max: Math.max(...ms) };
}

async function benchDialect(dialect: Dialect): Promise<(string | number)[][]> {
  const database = await createTestDatabase(dialect);
  const db = database.db;
  try {
    const project = await createProject(db, systemClock, 'bench');
    const campaign = async (name: string) =>
      (
        await createCampaign(db, systemClock, project.project_id, {
          name,
          status: 'active',
          api_triggered: true,
          message: { title: 'Hi' },
        })
      ).campaignId;
    const [main, other] = [await campaign('main'), await campaign('other')];
    const [trigger, noise] = [
      await newTrigger(db, project.project_id, main),
      await newTrigger(db, project.project_id, other),
    ];
    const t0 = performance.now();
    await fillLedger(db, trigger, deliveries);
    await fillLedger(db, noise, Math.floor(deliveries / 5));
    // PostgreSQL: as autovacuum leaves a table after a bulk load (statistics, visibility map for index-only scans).
    if (dialect === 'postgres') {
      await sql`vacuum analyze trigger_deliveries`.execute(db);
      await sql`vacuum analyze trigger_delivery_counts`.execute(db);
    }
    const loadSeconds = (performance.now() - t0) / 1000;
    const counted = await db
      .selectFrom('trigger_delivery_counts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    rollups.push(`${dialect} ${Number(counted.n)}`);
    const projectId = project.project_id;
    const queries: Array<[string, () => Promise<unknown>]> = [
      ['trigger, bucket=minute', () => triggerAnalytics(db, projectId, main, trigger, { bucket: 'minute' })],
      ['trigger, bucket=hour', () => triggerAnalytics(db, projectId, main, trigger, { bucket: 'hour' })],
      [
        'trigger, minute, 10-minute window',
        () =>
          triggerAnalytics(db, projectId, main, trigger, {
            bucket: 'minute',
            since: new Date(START + HOUR / 3).toISOString(),
            until: new Date(START + HOUR / 3 + 600_000).toISOString(),
          }),
      ],
      ['campaign, bucket=hour', () => campaignAnalytics(db, projectId, main, { bucket: 'hour' })],
      ['campaign, bucket=day', () => campaignAnalytics(db, projectId, main, { bucket: 'day' })],
    ];
    const check = (await triggerAnalytics(db, projectId, main, trigger, { bucket: 'hour' })).totals.by_state;
    const total = Object.values(check).reduce((a, b) => a + b, 0);
    if (total !== deliveries) throw new Error(`counted ${total} deliveries, generated ${deliveries}`);
    const rows: (string | number)[][] = [];
    for (const [name, fn] of queries) {
      const t = await time(fn);
      rows.push([dialect, name, t.median.toFixed(1), t.max.toFixed(1)]);
      console.log(`${dialect}: ${name}: median ${t.median.toFixed(1)} ms, max ${t.max.toFixed(1)} ms`);
    }
    rows.push([
      dialect,
      `(bulk load of ${deliveries + Math.floor(deliveries / 5)} rows, rollup kept by its trigger; ms)`,
      (loadSeconds * 1000).toFixed(0),
      '-',
    ]);
    return rows;
  } finally {
    await database.destroy();
  }
}

async function main(): Promise<void> {
  const rows: (string | number)[][] = [];
  for (const dialect of dialects) rows.push(...(await benchDialect(dialect)));
  const cpu = os.cpus();
  const body = [
    `Command: \`${commandLine('bench:analytics')}\` (${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${cpu.length} x ${cpu[0]?.model.trim() ?? 'CPU'}, 1-minute load average at end ${os.loadavg()[0]!.toFixed(1)}).`,
    '',
    `One campaign's trigger with ${deliveries} ledger rows (\`trigger_deliveries\`) spread over one hour (90% accepted, 5% unregistered, 3% failed, 2% render-skipped; fcm/apns/webpush in turn), and another campaign's trigger with ${Math.floor(deliveries / 5)} rows beside them. ` +
      'Each query is the service call behind `GET …/analytics` (totals by state, provider and reason, and the time series), in process on a fresh migrated database (SQLite file, or a PostgreSQL schema on 127.0.0.1 after `vacuum analyze` of both tables, as autovacuum leaves them). ' +
      'The reads use the per-minute rollup `trigger_delivery_counts` (migration 0015), which the database fills as the rows are inserted (PostgreSQL: 100 rows per insert and the rollup folded every 400 rows, as the fan-out writes and folds after each batch, so the partial rows the reads sum are as many as a real run leaves). ' +
      `Rollup rows after the load: ${rollups.join(', ')}. One warm-up, then ${runs} runs. Target: well under a second.`,
    '',
    markdownTable(['database', 'query', 'median ms', 'slowest ms'], rows),
  ].join('\n');
  if (!process.argv.includes('--no-write')) writeBenchmarkSection('Delivery analytics', body);
  console.log(body);
}

await main();
