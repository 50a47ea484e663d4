/**
 * What a broadcast dry run's count costs on the embedded database, for a large project and for a small
 * one beside it: `npm run bench:dry-run` (-- --users 1000000 --rounds 3). One SQLite file holds a
 * project of N users and one of N / 1,000, whose users arrive among the large one's (as on a shared
 * instance), each user with one device and time-ordered ids, as Herald makes them. Rounds alternate
 * Herald's count (a walk of `users_project_id` on the reader thread, src/db/sqlite-reader.ts) with the
 * count as it ran before (the same query over `users NOT INDEXED`, a scan of every project's users, on
 * the server's connection), through `POST /campaigns/{id}:trigger?dry_run=true` in this process. The
 * figures are each request's time and the event loop's longest stall meanwhile (what every other
 * request waited).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import pino from 'pino';
import { createCampaign } from '../src/campaigns/campaigns.service.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/connect.js';
import { sqliteDialect } from '../src/db/dialect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { createHerald } from '../src/herald.js';
import { systemClock } from '../src/lib/clock.js';
import { newTimeOrderedId } from '../src/lib/ids.js';
import { createProject } from '../src/projects/projects.service.js';
import { unlimitedRateLimiter } from '../test/helpers/unlimited-rate-limiter.js';
import { median, numberArg } from './lib/bench-args.js';
import { commandLine, markdownTable, measuredCommit, today, writeBenchmarkSection } from './lib/bench-report.js';

const USERS = numberArg('users', 1_000_000);
const ROUNDS = numberArg('rounds', 3);
const SMALL_EVERY = 1000;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-dry-run-'));
const file = path.join(dir, 'herald.sqlite');

/** The two projects and their campaigns (segment `plan eq pro`: 90% of users), then the users, inserted raw. */
async function prepare() {
  const database = openDatabase({ sqliteFile: file });
  await migrateToLatest(database.db);
  const campaign = { name: 'c', status: 'active', api_triggered: true, message: { title: 'Hi', body: 'Sale' } };
  const segment = { property: 'plan', op: 'eq', value: 'pro' };
  const projects = {
    large: await createProject(database.db, systemClock, 'large'),
    small: await createProject(database.db, systemClock, 'small'),
  };
  const campaigns = {
    large: (await createCampaign(database.db, systemClock, projects.large.project_id, { ...campaign, segment }))
      .campaignId,
    small: (await createCampaign(database.db, systemClock, projects.small.project_id, { ...campaign, segment }))
      .campaignId,
  };
  await database.close();
  const raw = new SQLite(file);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = OFF');
  const user = raw.prepare(
    'insert into users (id, project_id, project_user_id, properties, created_at, updated_at) values (?, ?, ?, ?, ?, ?)',
  );
  const device = raw.prepare(
    "insert into devices (project_id, device_id, user_id, platform, provider, push_address, push_keys, status, disabled_reason, created_at, updated_at) values (?, ?, ?, 'android', 'fcm', ?, null, 'active', null, ?, ?)",
  );
  const at = Date.now() - 60_000;
  const add = (projectId: string, i: number, idAt: number) => {
    const id = newTimeOrderedId(idAt);
    user.run(
      id,
      projectId,
      `user-${i}`,
      JSON.stringify({ plan: i % 10 === 0 ? 'free' : 'pro', score: i % 100 }),
      at,
      at,
    );
    device.run(projectId, randomUUID(), id, `token-${projectId.slice(0, 8)}-${i}`, at, at);
  };
  const chunk = raw.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const idAt = at - 50_000 + Math.floor((i * 50_000) / USERS);
      add(projects.large.project_id, i, idAt);
      if (i % SMALL_EVERY === 0) add(projects.small.project_id, i / SMALL_EVERY, idAt);
    }
  });
  for (let i = 0; i < USERS; i += 10_000) chunk(i, Math.min(USERS, i + 10_000));
  raw.pragma('wal_checkpoint(TRUNCATE)');
  raw.close();
  return { projects, campaigns };
}

const { projects, campaigns } = await prepare();
const config = loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dir, HERALD_SECRET_KEY: '11'.repeat(32) });
const database = openDatabase({ sqliteFile: file });
const build = (dryRunDb: typeof database.db) =>
  createHerald(config, {
    database: { ...database, dryRunDb },
    logger: pino({ level: 'silent' }),
    rateLimiter: unlimitedRateLimiter,
  });
const heralds = { herald: build(database.dryRunDb), before: build(database.db) };
const apps = { herald: await heralds.herald.buildApp(), before: await heralds.before.buildApp() };

const heraldWalk = sqliteDialect.projectUsersInOrder.bind(sqliteDialect);
const walks = { herald: heraldWalk, before: () => sql`users not indexed` };
type Way = keyof typeof walks;
type Size = keyof typeof projects;
interface Sample {
  ms: number;
  stallMs: number;
}

/** One dry run, counted the way `way` reads the users: its time and the event loop's longest stall meanwhile. */
async function dryRun(way: Way, size: Size): Promise<Sample> {
  (sqliteDialect as { projectUsersInOrder: () => unknown }).projectUsersInOrder = walks[way];
  // The longest gap between turns of a 1 ms timer: how long any other request would have waited.
  let last = performance.now();
  let stallMs = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 1);
  const started = performance.now();
  const response = await apps[way].inject({
    method: 'POST',
    url: `/api/v1/campaigns/${campaigns[size]}:trigger?dry_run=true`,
    headers: { 'x-service-project-id': projects[size].project_id, 'x-service-api-key': projects[size].secret_key },
    payload: { audience: { broadcast: true } },
  });
  const ms = performance.now() - started;
  await new Promise((resolve) => setTimeout(resolve, 5));
  clearInterval(ticker);
  const expected = size === 'large' ? USERS : USERS / SMALL_EVERY;
  const counted = response.json<{ counters?: { in_segment: number } }>().counters?.in_segment;
  if (response.statusCode !== 200 || counted !== expected * 0.9)
    throw new Error(`dry run: ${response.statusCode} ${response.body}`);
  return { ms, stallMs };
}

const samples: Record<Way, Record<Size, Sample[]>> = {
  herald: { large: [], small: [] },
  before: { large: [], small: [] },
};
for (const way of ['before', 'herald'] as const)
  for (const size of ['large', 'small'] as const) await dryRun(way, size);
for (let round = 0; round < ROUNDS; round++)
  for (const way of ['before', 'herald'] as const)
    for (const size of ['large', 'small'] as const) samples[way][size].push(await dryRun(way, size));
(sqliteDialect as { projectUsersInOrder: () => unknown }).projectUsersInOrder = heraldWalk;
for (const way of ['herald', 'before'] as const) {
  await apps[way].close();
  await heralds[way].close();
}
await database.close();
fs.rmSync(dir, { recursive: true, force: true });

const fmt = (values: number[]) => `${median(values).toFixed(1)} (${values.map((v) => v.toFixed(1)).join(', ')})`;
const of = (way: Way, size: Size, key: keyof Sample) => samples[way][size].map((sample) => sample[key]);
const label = {
  large: `${USERS.toLocaleString('en')} users`,
  small: `${(USERS / SMALL_EVERY).toLocaleString('en')} users, beside it`,
};
const table = markdownTable(
  ['project', 'way', 'dry run ms (median, rounds)', 'longest event-loop stall ms'],
  (['large', 'small'] as const).flatMap((size) => [
    [
      label[size],
      'Herald: walk of users_project_id, reader thread',
      fmt(of('herald', size, 'ms')),
      fmt(of('herald', size, 'stallMs')),
    ],
    [
      label[size],
      "before: scan of every project's users, server connection",
      fmt(of('before', size, 'ms')),
      fmt(of('before', size, 'stallMs')),
    ],
  ]),
);
const body = `Command: \`${commandLine('bench:dry-run')}\`, run ${today()} on commit \`${measuredCommit()}\` (Node ${process.version}).

One embedded SQLite file: a project of ${USERS.toLocaleString('en')} users and one of ${(USERS / SMALL_EVERY).toLocaleString('en')} whose users arrive among the first's, each user with one FCM device, ids time-ordered as Herald makes them. ${ROUNDS} alternated rounds after a warm-up, in one process: \`POST /api/v1/campaigns/{id}:trigger?dry_run=true\` (a broadcast, segment \`plan eq pro\`), timed per request, with the count as Herald runs it (a walk of \`users_project_id\` on its reader thread) and as it ran before (\`users NOT INDEXED\` on the server's connection). The stall is the longest gap between turns of a 1 ms timer during the request: what any other request waited.

${table}
`;
console.log(body);
if (!process.argv.includes('--no-write')) writeBenchmarkSection('Dry-run counts on SQLite', body);
