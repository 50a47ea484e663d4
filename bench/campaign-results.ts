// bench:campaign-results: the campaign results queries (rule `campaign-results`) over a bulk-generated
// experiment on both databases. Per dialect: a fresh migrated database, one campaign with variants a
// and b and a 10% control group whose trigger has N ledger rows spread over an hour (control rows
// SKIPPED/CONTROL; of the rest 95% accepted, 5% failed), opens for 10% of the accepted sends and
// conversions for 2% of all rows (accepted sends; two goals, the first with revenue), both spread over
// the next day and inserted as the app's are, so the database's triggers fill their per-minute rollups
// (migration 0051); plus a second campaign's trigger with N/5 rows and its opens and conversions beside.
// Checks that the rollups count what the rows hold.
// Each query runs once to warm up, then `--runs` times; the median and slowest are printed and, from a
// committed tree without --no-write, written to docs/benchmarks.md (target: every median under 50 ms at 10M).
// Usage: npm run bench:campaign-results -- [--deliveries 1000000] [--runs 7] [--dialects sqlite,postgres] [--no-write]
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { sql } from 'kysely';
import { foldDeliveryCounts } from '../src/campaigns/analytics/delivery-analytics.repository.js';
import { foldOutcomeCounts } from '../src/campaigns/results/outcome-rollups.repository.js';
import { createCampaign } from '../src/campaigns/campaigns.service.js';
import { campaignResults } from '../src/campaigns/results/results.service.js';
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
const STEP = 50_000;

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
 * `n` ledger rows and their opens, generated inside the database. Row i: control when i % 10 = 0,
 * else variant a or b by parity; of the sent, 5% fail. Opens: the accepted rows with i % 10 = 3 (a)
 * or i % 20 in (4, 6) (b, so b opens more), opened up to a day after the hour of sends.
 */
async function fill(db: Db, projectId: string, campaignId: string, triggerId: string, n: number): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const tag = triggerId.slice(0, 8);
  for (let from = 0; from < n; from += STEP) {
    const to = Math.min(n, from + STEP) - 1;
    const series = pg
      ? sql`(select generate_series(${from}::int, ${to}::int) as i) s`
      : sql`(with recursive seq(i) as (select ${from} union all select i + 1 from seq where i < ${to}) select i from seq) s`;
    await sql`insert into trigger_deliveries
        (trigger_id, device_id, batch_no, user_id, status, message_id, failure_reason, token_action, detail, provider, created_at, variant)
      select ${triggerId}, 'd' || i, i / 400, 'u' || i,
        case when i % 10 = 0 then 'DELIVERY_RESULT_STATUS_SKIPPED'
             when i % 20 = 1 then 'DELIVERY_RESULT_STATUS_FAILED'
             else 'DELIVERY_RESULT_STATUS_ACCEPTED' end,
        case when i % 10 <> 0 then ${tag} || 'm' || i end,
        case when i % 10 = 0 then 'CONTROL' when i % 20 = 1 then 'UNAVAILABLE' end,
        null, null, 'fcm',
        ${sql.lit(START)} + (cast(i as bigint) * ${sql.lit(HOUR)}) / ${sql.lit(n)},
        case when i % 10 = 0 then 'control' when i % 2 = 1 then 'a' else 'b' end
      from ${series}`.execute(db);
    await sql`insert into message_opens
        (message_id, project_id, project_user_id, campaign_id, trigger_id, variant, action, opened_at, received_at)
      select ${tag} || 'm' || i, ${projectId}, 'u' || i, ${campaignId}, ${triggerId},
        case when i % 2 = 1 then 'a' else 'b' end, null,
        ${sql.lit(START + HOUR)} + (cast(i as bigint) * ${sql.lit(24 * HOUR)}) / ${sql.lit(n)},
        ${sql.lit(START + HOUR)} + (cast(i as bigint) * ${sql.lit(24 * HOUR)}) / ${sql.lit(n)}
      from ${series} where i % 10 = 3 or i % 20 in (4, 6)`.execute(db);
    // i % 50 = 7: accepted sends of a (odd i); goal 0 with revenue when i % 100 = 7, else goal 1.
    await sql`insert into conversions
        (trigger_id, user_id, goal_index, project_id, campaign_id, message_id, event_id, converted_at, received_at, revenue, variant)
      select ${triggerId}, 'u' || i, case when i % 100 = 7 then 0 else 1 end, ${projectId}, ${campaignId},
        ${tag} || 'm' || i, 'e' || i,
        ${sql.lit(START + HOUR)} + (cast(i as bigint) * ${sql.lit(24 * HOUR)}) / ${sql.lit(n)},
        ${sql.lit(START + HOUR)} + (cast(i as bigint) * ${sql.lit(24 * HOUR)}) / ${sql.lit(n)},
        case when i % 100 = 7 then (i % 997) / 4.0 end, 'a'
      from ${series} where i % 50 = 7`.execute(db);
  }
  // PostgreSQL's statement trigger left partial rollup rows: folded as the fan-out does after each batch.
  // The open and conversion rollups' partials (one per statement and group) as the retention pass folds them.
  if (pg) {
    await foldDeliveryCounts(db, triggerId);
    await foldOutcomeCounts(db, triggerId);
  } else
    await sql`insert into trigger_delivery_counts (trigger_id, minute, status, provider, reason, variant, n)
      select trigger_id, (created_at / 60000) * 60000, status, coalesce(provider, ''), coalesce(failure_reason, ''),
        coalesce(variant, ''), count(*)
      from trigger_deliveries where trigger_id = ${triggerId} group by 1, 2, 3, 4, 5, 6`.execute(db);
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

async function benchDialect(dialect: Dialect): Promise<string[]> {
  const database = await createTestDatabase(dialect);
  const db = database.db;
  try {
    const project = await createProject(db, systemClock, 'bench');
    const projectId = project.project_id;
    const campaign = async (name: string) =>
      (
        await createCampaign(db, systemClock, projectId, {
          name,
          status: 'active',
          api_triggered: true,
          message: { title: 'Hi' },
          variants: [
            { variant_id: 'a', weight: 1, message: { title: 'A' } },
            { variant_id: 'b', weight: 1, message: { title: 'B' } },
          ],
          control_percent: 10,
          conversion_goals: [
            { event: 'purchase', deadline: '1d', revenue_property: 'amount' },
            { event: 'signup', deadline: '1d' },
          ],
        })
      ).campaignId;
    const [main, other] = [await campaign('main'), await campaign('other')];
    const [trigger, noise] = [await newTrigger(db, projectId, main), await newTrigger(db, projectId, other)];
    const t0 = performance.now();
    await fill(db, projectId, main, trigger, deliveries);
    await fill(db, projectId, other, noise, Math.floor(deliveries / 5));
    if (dialect === 'postgres')
      for (const table of [
        'trigger_deliveries',
        'trigger_delivery_counts',
        'message_opens',
        'trigger_open_counts',
        'conversions',
        'trigger_conversion_counts',
      ])
        await sql`vacuum analyze ${sql.table(table)}`.execute(db);
    // The load's dirty pages written out now, not by a checkpoint during the timed reads.
    await (dialect === 'postgres' ? sql`checkpoint` : sql`pragma wal_checkpoint(truncate)`).execute(db);
    const loadSeconds = (performance.now() - t0) / 1000;
    const check = await campaignResults(db, projectId, main, {});
    const total = check.totals.sent + check.totals.skipped;
    if (total !== deliveries) throw new Error(`counted ${total} deliveries, generated ${deliveries}`);
    const raw = (
      await sql<{ opens: number; conversions: number; revenue: number }>`select
          (select count(*) from message_opens where trigger_id = ${trigger}) as opens,
          (select count(*) from conversions where trigger_id = ${trigger}) as conversions,
          (select coalesce(sum(revenue), 0) from conversions where trigger_id = ${trigger}) as revenue`.execute(db)
    ).rows[0]!;
    const converted = check.totals.conversions.reduce((n, g) => n + g.converted, 0);
    const revenue = check.totals.conversions.reduce((n, g) => n + g.revenue, 0);
    if (check.totals.opened !== Number(raw.opens) || converted !== Number(raw.conversions))
      throw new Error(
        `rollups counted ${check.totals.opened} opens, ${converted} conversions; rows hold ${raw.opens}, ${raw.conversions}`,
      );
    if (Math.abs(revenue - Number(raw.revenue)) > 1e-6 * Math.max(1, Number(raw.revenue)))
      throw new Error(`rollup revenue ${revenue}, rows ${raw.revenue}`);
    const lines = [
      `${dialect}: load ${loadSeconds.toFixed(0)} s; opens ${check.totals.opened}; conversions ${converted}; arms ${check.variants
        .map((a) => `${a.variant} ${a.delivered}/${a.opened}`)
        .join(', ')}`,
    ];
    const queries: Array<[string, () => Promise<unknown>]> = [
      ['campaign, granularity=day', () => campaignResults(db, projectId, main, { granularity: 'day' })],
      ['campaign, granularity=hour', () => campaignResults(db, projectId, main, { granularity: 'hour' })],
      [
        'trigger, granularity=hour',
        () => campaignResults(db, projectId, main, { trigger_id: trigger, granularity: 'hour' }),
      ],
      [
        'trigger, granularity=minute',
        () => campaignResults(db, projectId, main, { trigger_id: trigger, granularity: 'minute' }),
      ],
      [
        'campaign, hour, 6-hour window',
        () =>
          campaignResults(db, projectId, main, {
            granularity: 'hour',
            from: new Date(START).toISOString(),
            to: new Date(START + 6 * HOUR).toISOString(),
          }),
      ],
    ];
    for (const [name, fn] of queries) {
      const t = await time(fn);
      timings.push({ dialect, name, ...t });
      lines.push(`${dialect}: ${name}: median ${t.median.toFixed(1)} ms, slowest ${t.max.toFixed(1)} ms`);
      console.log(lines[lines.length - 1]);
    }
    return lines;
  } finally {
    await database.destroy();
  }
}

const timings: Array<{ dialect: Dialect; name: string; median: number; max: number }> = [];
const out: string[] = [];
const loadBefore = os.loadavg()[0]!;
for (const dialect of dialects) out.push(...(await benchDialect(dialect)));
const cpu = os.cpus();
console.log(
  `\n${commandLine('bench:campaign-results')} (Node ${process.version}, ${cpu.length} x ${cpu[0]?.model.trim() ?? 'CPU'}, load ${os.loadavg()[0]!.toFixed(1)}), ${deliveries} deliveries + ${Math.floor(deliveries / 5)} beside, ${runs} runs:\n${out.join('\n')}`,
);

const TARGET_MS = 50;
const names = [...new Set(timings.map((t) => t.name))];
const cellOf = (dialect: Dialect, name: string) => {
  const t = timings.find((x) => x.dialect === dialect && x.name === name);
  return t ? `${t.median.toFixed(1)} (${t.max.toFixed(1)})` : '-';
};
const met = timings.every((t) => t.median < TARGET_MS);
if (!process.argv.includes('--no-write'))
  writeBenchmarkSection(
    'Campaign results',
    [
      `Command: \`${commandLine('bench:campaign-results')}\`. Per database, a fresh migrated database holding one campaign with variants a and b, a 10% control group and two conversion goals, whose trigger has ${deliveries.toLocaleString('en-US')} ledger rows over an hour (control rows skipped; of the rest 95% accepted), opens for 10% of the accepted sends and conversions for 2% of the rows spread over the next day, inserted as the app inserts them so the database fills its per-minute rollups; and a second campaign's trigger with a fifth as many beside it. Each query is \`GET /api/v1/campaigns/{id}/results\`'s service call (rule \`campaign-results\`: totals, per trigger, per variant with intervals and lift, and the series), run once to warm up and then ${runs} times. ${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown CPU'}), Node ${process.version}, 1-minute load average at start ${loadBefore.toFixed(1)}. Measured ${new Date().toISOString().slice(0, 10)}.`,
      '',
      markdownTable(
        ['query', ...dialects.map((d) => `${d === 'sqlite' ? 'SQLite' : 'PostgreSQL'} median ms (slowest)`)],
        names.map((name) => [name, ...dialects.map((d) => cellOf(d, name))]),
      ),
      '',
      `Target: every median under ${TARGET_MS} ms at 10,000,000 deliveries on both databases: **${met && deliveries >= 10_000_000 ? 'met' : met ? `under ${TARGET_MS} ms, at fewer than 10M deliveries` : 'not met'}**. The reads are of the per-minute rollups of deliveries, opens and conversions (migrations 0015 and 0051), never the ledger, the opens or the conversions themselves.`,
    ].join('\n'),
  );
