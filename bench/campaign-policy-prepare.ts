// bench:campaign-policy, step 1 of a run: a fresh database (an embedded SQLite file in --dir, or the
// PostgreSQL database --database-url names) with a project, FCM credentials for the stand-in, N users
// with one FCM device each (90% in the segment), a topic, explicit preferences for 30% of users and a
// send history (0 to 3 earlier sends per user), the same for both sides. `--policy on` adds every gate
// (10 cap rules, the campaign's topic, tags and re-eligibility window, project quiet hours and a
// do-not-disturb window for 10% of users, both outside now, and a send-rate limit); `off` none.
// Runs in its own process so the bulk insert's memory never counts against the fan-out's.
// Usage: node --import tsx bench/campaign-policy-prepare.ts --size N --dir DIR --fakes FAKES_DIR --policy on|off
//        [--database-url URL] [--rate-limit N (0: none)]
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { createCampaign } from '../src/campaigns/campaigns.service.js';
import { setFrequencyCaps } from '../src/campaigns/policies/frequency-caps.service.js';
import { setProjectQuietHours } from '../src/campaigns/policies/quiet-hours-settings.service.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { systemClock } from '../src/lib/clock.js';
import { createTopic } from '../src/preferences/topics.service.js';
import { createProject } from '../src/projects/projects.service.js';
import { setFcmCredentials } from '../src/push/credentials/credentials.service.js';
import { createSecretBox, resolveSecretKey } from '../src/crypto/secret-box.js';
import type { PreparedBench } from './campaign-prepare.js';
import { seededUserId } from './lib/seed-ids.js';

const BENCH_SECRET_KEY = '11'.repeat(32);
const HOUR = 3_600_000;

const arg = (name: string, fallback?: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  const value = i < 0 ? fallback : process.argv[i + 1];
  if (value === undefined) throw new Error(`--${name} is required`);
  return value;
};

/**
 * The users' zones (the `time_zone` property; every tenth user has none, so the project's UTC): all
 * within UTC-1 to UTC+2, so one window placed hours ahead of now is outside it for everyone.
 */
const ZONES = ['Europe/London', 'Europe/Berlin', 'Europe/Lisbon', 'Africa/Lagos', 'Europe/Helsinki', 'Atlantic/Azores'];
const zoneOf = (i: number) => (i % 10 === 9 ? undefined : ZONES[i % ZONES.length]);

/** `HH:MM` in UTC, `hours` from now. */
const utcClock = (now: number, hours: number) => new Date(now + hours * HOUR).toISOString().slice(11, 16);

/**
 * The cap rules: rolling and calendar windows, four per tag. Under the send history below none is
 * reached (at most three earlier sends, the right ones outside each window), yet several have a `max`
 * small enough that the gate works out their window for many users.
 */
export const CAP_RULES = [
  { max: 3, per: 'day' },
  { max: 4, per: 'week' },
  { max: 2, per: { hours: 4 } },
  { max: 3, per: { hours: 48 } },
  { max: 10, per: { minutes: 90 } },
  { max: 5, per: { hours: 240 } },
  { max: 2, per: 'day', tag: 'promo' },
  { max: 3, per: 'week', tag: 'promo' },
  { max: 2, per: { hours: 12 }, tag: 'promo' },
  { max: 2, per: 'week', tag: 'spring' },
];
/** The bench campaign's re-eligibility window: 7 days (its own earlier send is 8 days old). */
const REELIGIBLE_SECONDS = 7 * 24 * 3600;

/** User i's earlier sends: the first i % 4 of these (hours ago, tags, whether it was the bench campaign). */
const HISTORY = [
  { hoursAgo: 3, tags: ['promo'], own: false },
  { hoursAgo: 30, tags: [], own: false },
  { hoursAgo: 5 * 24, tags: ['promo', 'spring'], own: false },
  { hoursAgo: 8 * 24, tags: ['promo', 'spring'], own: true },
];

interface Audience {
  projectId: string;
  campaignId: string;
  topicId: string;
  n: number;
  now: number;
  /** Users with their own do-not-disturb window (the gated side only), and that window. */
  dnd?: { start: string; end: string };
}

const userProperties = (i: number) =>
  JSON.stringify({
    plan: i % 10 === 0 ? 'free' : 'pro',
    first_name: `Name${i}`,
    score: i % 100,
    ...(zoneOf(i) && { time_zone: zoneOf(i) }),
  });

function insertSqlite(sqliteFile: string, a: Audience): void {
  const raw = new SQLite(sqliteFile);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = OFF');
  raw.pragma('cache_size = -262144');
  const user = raw.prepare(
    'insert into users (id, project_id, project_user_id, properties, created_at, updated_at) values (?, ?, ?, ?, ?, ?)',
  );
  const device = raw.prepare(
    "insert into devices (project_id, device_id, user_id, platform, provider, push_address, push_keys, status, disabled_reason, created_at, updated_at) values (?, ?, ?, 'android', 'fcm', ?, null, 'active', null, ?, ?)",
  );
  const pref = raw.prepare(
    "insert into user_preferences (user_id, project_id, campaign_pushes, topics, updated_at) values (?, ?, 'subscribed', ?, ?)",
  );
  const sent = raw.prepare(
    'insert into user_sends (trigger_id, user_id, project_id, campaign_id, batch_no, tags, counts, sent_at) values (?, ?, ?, ?, 0, ?, 1, ?)',
  );
  const dnd = raw.prepare(
    'insert into user_quiet_hours (user_id, project_id, start_time, end_time, updated_at) values (?, ?, ?, ?, ?)',
  );
  const at = a.now - 1000;
  const topics = JSON.stringify({ [a.topicId]: 'subscribed' });
  const chunk = raw.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const id = seededUserId(i, a.n, at);
      user.run(id, a.projectId, `user-${i}`, userProperties(i), at, at);
      device.run(a.projectId, randomUUID(), id, `bench${i}x${id.slice(0, 8)}`, at, at);
      if (i % 10 < 3) pref.run(id, a.projectId, topics, at);
      for (const [k, h] of HISTORY.slice(0, i % 4).entries())
        sent.run(
          `history-${k}`,
          id,
          a.projectId,
          h.own ? a.campaignId : 'earlier',
          JSON.stringify(h.tags),
          a.now - h.hoursAgo * HOUR,
        );
      if (a.dnd && i % 10 === 5) dnd.run(id, a.projectId, a.dnd.start, a.dnd.end, at);
    }
  });
  for (let i = 0; i < a.n; i += 10_000) chunk(i, Math.min(a.n, i + 10_000));
  raw.pragma('wal_checkpoint(TRUNCATE)');
  raw.close();
}

/** The same rows on PostgreSQL, set-based (`generate_series`), then analysed. */
async function insertPostgres(url: string, a: Audience): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const at = a.now - 1000;
    const zones = `(array[${ZONES.map((z) => `'${z}'`).join(',')}])[(g % ${ZONES.length}) + 1]`;
    await client.query(
      `create temporary table bench_ids as select (o - 1)::int as g, id from unnest($1::text[]) with ordinality as t(id, o)`,
      [Array.from({ length: a.n }, (_, i) => seededUserId(i, a.n, at))],
    );
    await client.query(
      `insert into users (id, project_id, project_user_id, properties, created_at, updated_at)
       select id, $1, 'user-' || g,
              jsonb_build_object('plan', case when g % 10 = 0 then 'free' else 'pro' end, 'first_name', 'Name' || g, 'score', g % 100)
              || case when g % 10 = 9 then '{}'::jsonb else jsonb_build_object('time_zone', ${zones}) end,
              $2, $2
       from bench_ids`,
      [a.projectId, at],
    );
    await client.query(
      `insert into devices (project_id, device_id, user_id, platform, provider, push_address, push_keys, status, disabled_reason, created_at, updated_at)
       select $1, gen_random_uuid()::text, id, 'android', 'fcm', 'bench' || g || 'x' || left(id, 8), null, 'active', null, $2, $2
       from bench_ids`,
      [a.projectId, at],
    );
    await client.query(
      `insert into user_preferences (user_id, project_id, campaign_pushes, topics, updated_at)
       select id, $1, 'subscribed', $2::jsonb, $3 from bench_ids where g % 10 < 3`,
      [a.projectId, JSON.stringify({ [a.topicId]: 'subscribed' }), at],
    );
    for (const [k, h] of HISTORY.entries())
      await client.query(
        `insert into user_sends (trigger_id, user_id, project_id, campaign_id, batch_no, tags, counts, sent_at)
         select $1, id, $2, $3, 0, $4::jsonb, 1, $5 from bench_ids where g % 4 > $6`,
        [
          `history-${k}`,
          a.projectId,
          h.own ? a.campaignId : 'earlier',
          JSON.stringify(h.tags),
          a.now - h.hoursAgo * HOUR,
          k,
        ],
      );
    if (a.dnd)
      await client.query(
        `insert into user_quiet_hours (user_id, project_id, start_time, end_time, updated_at)
         select id, $1, $2, $3, $4 from bench_ids where g % 10 = 5`,
        [a.projectId, a.dnd.start, a.dnd.end, at],
      );
    for (const table of ['users', 'devices', 'user_preferences', 'user_sends', 'user_quiet_hours'])
      await client.query(`vacuum analyze ${table}`);
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  const size = Number(arg('size'));
  const dir = arg('dir');
  const fakes = arg('fakes');
  const policy = arg('policy') === 'on';
  const rateLimit = Number(arg('rate-limit', '1000000'));
  const databaseUrl = process.argv.includes('--database-url') ? arg('database-url') : undefined;
  const sqliteFile = path.join(dir, 'herald.sqlite');
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    DATA_DIR: dir,
    HERALD_SECRET_KEY: BENCH_SECRET_KEY,
    ...(databaseUrl && { DATABASE_URL: databaseUrl }),
  });
  const database = openDatabase(databaseUrl ? { url: databaseUrl } : { sqliteFile });
  const { db } = database;
  await migrateToLatest(db);
  const project = await createProject(db, systemClock, 'bench');
  const box = createSecretBox(resolveSecretKey(config, database.dialect));
  const serviceAccount = JSON.parse(fs.readFileSync(path.join(fakes, 'fcm-service-account.json'), 'utf8')) as {
    token_uri: string;
  };
  // The stand-in's token endpoint is on loopback and is the benchmark's FCM_API_URL: trusted like it.
  await setFcmCredentials(db, () => box, systemClock, project.project_id, serviceAccount, {
    outbound: { allowPrivateNetworks: false },
    trustedOrigins: [new URL(serviceAccount.token_uri).origin],
    extraHosts: [],
  });
  const topic = await createTopic(db, systemClock, project.project_id, { key: 'promotions', name: 'Promotions' });
  const now = Date.now();
  if (policy) {
    await setFrequencyCaps(db, project.project_id, { rules: CAP_RULES });
    await setProjectQuietHours(db, project.project_id, { start: utcClock(now, 5), end: utcClock(now, 8) });
  }
  const campaign = await createCampaign(db, systemClock, project.project_id, {
    name: 'bench',
    status: 'active',
    api_triggered: true,
    segment: { property: 'plan', op: 'eq', value: 'pro' },
    message: { title: 'Hi {{ user.first_name }}', body: 'Use {{ trigger.code }} today, {{ user.project_user_id }}' },
    ...(policy && {
      topic: 'promotions',
      tags: ['promo', 'spring'],
      reeligibility: { mode: 'window', seconds: REELIGIBLE_SECONDS },
      ...(rateLimit > 0 && { max_sends_per_minute: rateLimit }),
    }),
  });
  await database.close();
  const audience: Audience = {
    projectId: project.project_id,
    campaignId: campaign.campaignId,
    topicId: topic.topicId,
    n: size,
    now,
    ...(policy && { dnd: { start: utcClock(now, 10), end: utcClock(now, 12) } }),
  };
  const started = performance.now();
  if (databaseUrl) await insertPostgres(databaseUrl, audience);
  else insertSqlite(sqliteFile, audience);
  const prepared: PreparedBench = {
    projectId: project.project_id,
    secretKey: project.secret_key,
    campaignId: campaign.campaignId,
    insertSeconds: (performance.now() - started) / 1000,
  };
  fs.writeFileSync(path.join(dir, 'prepared.json'), JSON.stringify(prepared));
}

await main();
