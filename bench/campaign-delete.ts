/**
 * What deleting a campaign sent to many users costs the event loop and how long it takes, on both
 * databases: `npm run bench:campaign-delete` (-- --recipients 200000 --rounds 3). Each round seeds one
 * campaign (a finished trigger with a ledger row per recipient, a conversion and an open for every
 * tenth) and deletes it, alternating Herald's `deleteCampaign` (statements of RETENTION_CHUNK_ROWS
 * rows with a turn of the event loop between them) with one statement per table, as it was before
 * (the campaign's cascade takes the ledger). The longest stall is the longest gap between turns of
 * the event loop while the delete ran: every other request waits that long on SQLite.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { deleteCampaign } from '../src/campaigns/campaigns.service.js';
import { openDatabase, type DatabaseHandle } from '../src/db/connect.js';
import type { Db } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { createDayPartition, dayStart } from '../src/db/partitions.js';
import { median, numberArg } from './lib/bench-args.js';
import { withPostgresSchema } from './lib/bench-schema.js';
import { commandLine, markdownTable, measuredCommit, today, writeBenchmarkSection } from './lib/bench-report.js';

const RECIPIENTS = numberArg('recipients', 200_000);
const ROUNDS = numberArg('rounds', 3);
const CHUNK = numberArg('chunk', 5000);
const AT = dayStart(Date.now());

const numbers = sql`with recursive s(i) as (select 1 union all select i + 1 from s where i < ${RECIPIENTS})`;

async function seedUsers(db: Db): Promise<void> {
  await sql`insert into projects (id, name, created_at) values ('p', 'p', 0)`.execute(db);
  await sql`${numbers} insert into users (id, project_id, project_user_id, properties, created_at, updated_at)
    select 'u' || i, 'p', 'u' || i, '{}', 0, 0 from s`.execute(db);
}

/** One campaign `c` with a finished trigger sent to every user, a conversion and an open for every tenth. */
async function seedCampaign(db: Db, c: string): Promise<void> {
  await sql`insert into campaigns (project_id, campaign_id, name, status, api_triggered, default_audience, message,
    created_at, updated_at) values ('p', ${c}, ${c}, 'active', ${sql.lit(1)}, '{}', '{}', 0, 0)`.execute(db);
  await sql`insert into campaign_triggers (id, project_id, campaign_id, state, definition, audience, properties,
    targets, snapshot_at, created_at) values (${c}, 'p', ${c}, 'finished', '{}', '{}', '{}', ${RECIPIENTS}, ${AT}, ${AT})`.execute(
    db,
  );
  await sql`${numbers} insert into trigger_deliveries (trigger_id, device_id, batch_no, user_id, status, message_id,
    created_at, project_id, trigger_created_at) select ${c}, 'd' || i, 0, 'u' || i, 'sent', ${c} || '-' || i, ${AT}, 'p', ${AT} from s`.execute(
    db,
  );
  await sql`${numbers} insert into conversions (trigger_id, user_id, goal_index, project_id, campaign_id, event_id,
    converted_at, received_at) select ${c}, 'u' || i, 0, 'p', ${c}, 'e' || i, ${AT}, ${AT} from s where i % 10 = 0`.execute(
    db,
  );
  await sql`${numbers} insert into message_opens (message_id, project_id, campaign_id, trigger_id, opened_at, received_at)
    select ${c} || '-' || i, 'p', ${c}, ${c}, ${AT}, ${AT} from s where i % 10 = 0`.execute(db);
}

/** The deletion before chunking: the campaign (its cascade takes the ledger), then its conversions and opens. */
async function oneStatementPerTable(db: Db, c: string): Promise<void> {
  await sql`delete from campaigns where project_id = 'p' and campaign_id = ${c}`.execute(db);
  await sql`delete from conversions where project_id = 'p' and campaign_id = ${c}`.execute(db);
  await sql`delete from message_opens where project_id = 'p' and campaign_id = ${c}`.execute(db);
}

type Timing = { totalMs: number; stallMs: number };

/** Runs `work`, answering its time and the longest gap between turns of the event loop meanwhile (ms). */
async function timed(work: () => Promise<unknown>): Promise<Timing> {
  let last = performance.now();
  let stallMs = 0;
  let running = true;
  const tick = () => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  const began = performance.now();
  await work();
  const totalMs = performance.now() - began;
  running = false;
  tick();
  return { totalMs, stallMs };
}

async function run(name: string, handle: DatabaseHandle): Promise<(string | number)[][]> {
  const { db } = handle;
  await migrateToLatest(db);
  if (handle.dialect.supportsPartitions)
    for (const table of ['trigger_deliveries'] as const) await createDayPartition(db, table, AT);
  await seedUsers(db);
  const results: Record<'before' | 'chunked', Timing[]> = { before: [], chunked: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const variant of ['before', 'chunked'] as const) {
      const c = `${variant}-${round}`;
      await seedCampaign(db, c);
      results[variant].push(
        await timed(() => (variant === 'chunked' ? deleteCampaign(db, 'p', c, CHUNK) : oneStatementPerTable(db, c))),
      );
      const left = await sql<{
        n: number;
      }>`select count(*) as n from trigger_deliveries where trigger_id = ${c}`.execute(db);
      if (Number(left.rows[0]!.n) !== 0) throw new Error(`${variant} left ledger rows`);
    }
  }
  const row = (label: string, xs: Timing[]) => [
    name,
    label,
    median(xs.map((x) => x.stallMs)).toFixed(1),
    median(xs.map((x) => x.totalMs)).toFixed(0),
    xs.map((x) => x.stallMs.toFixed(0)).join(', '),
  ];
  return [row('one statement per table (before)', results.before), row(`chunks of ${CHUNK} rows`, results.chunked)];
}

async function sqliteRun(): Promise<(string | number)[][]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-campaign-delete-'));
  const handle = openDatabase({ sqliteFile: path.join(dir, 'herald.sqlite') });
  try {
    return await run('embedded SQLite', handle);
  } finally {
    await handle.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const postgresRun = (): Promise<(string | number)[][]> => withPostgresSchema((handle) => run('PostgreSQL', handle));

const rows = [...(await sqliteRun()), ...(await postgresRun())];
const table = markdownTable(
  ['database', 'deletion', 'longest event-loop stall, ms (median)', 'total, ms (median)', 'stall per round, ms'],
  rows,
);
const body = `Command: \`${commandLine('bench:campaign-delete')}\`, run ${today()} on commit \`${measuredCommit()}\` (Node ${process.version}).

Deleting one campaign whose finished trigger reached ${RECIPIENTS.toLocaleString('en')} recipients (a ledger row each, a conversion and an open for every tenth), ${ROUNDS} alternated rounds. The stall is the longest gap between turns of the event loop while the delete ran: on SQLite every other request of every project waits that long.

${table}`;
console.log(body);
writeBenchmarkSection('Campaign deletion', body);
