// bench:campaign, step 1 of a size: a fresh embedded SQLite file with a project, FCM credentials for
// the stand-in, N users with one FCM device each (90% of them in the segment) and an active campaign.
// Runs in its own process so the bulk insert's memory never counts against the fan-out's.
// Usage: [CAMPAIGN_BENCH_MESSAGE=shared] node --import tsx bench/campaign-prepare.ts --size N --dir DIR --fakes FAKES_DIR
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { createCampaign } from '../src/campaigns/campaigns.service.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { systemClock } from '../src/lib/clock.js';
import { createProject } from '../src/projects/projects.service.js';
import { setFcmCredentials } from '../src/push/credentials/credentials.service.js';
import { createSecretBox, resolveSecretKey } from '../src/crypto/secret-box.js';
import { seededUserId } from './lib/seed-ids.js';

export interface PreparedBench {
  projectId: string;
  secretKey: string;
  campaignId: string;
  insertSeconds: number;
}

const BENCH_SECRET_KEY = '11'.repeat(32);

const arg = (name: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0 || process.argv[i + 1] === undefined) throw new Error(`--${name} is required`);
  return process.argv[i + 1]!;
};

/**
 * Users with one device each, inserted 10,000 per transaction. User ids are time-ordered, a millisecond
 * apart, as Herald makes them (src/lib/ids.ts), so the audience's keyset walk reads rows in the order
 * they were added, as on real data; device ids are random, as an app may give its own.
 */
function insertAudience(sqliteFile: string, projectId: string, n: number): void {
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
  const at = Date.now() - 1000;
  const chunk = raw.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const id = seededUserId(i, n, at);
      user.run(
        id,
        projectId,
        `user-${i}`,
        JSON.stringify({ plan: i % 10 === 0 ? 'free' : 'pro', first_name: `Name${i}`, score: i % 100 }),
        at,
        at,
      );
      device.run(projectId, randomUUID(), id, `bench${i}x${id.slice(0, 8)}`, at, at);
    }
  });
  for (let i = 0; i < n; i += 10_000) chunk(i, Math.min(n, i + 10_000));
  raw.pragma('wal_checkpoint(TRUNCATE)');
  raw.close();
}

async function main(): Promise<void> {
  const size = Number(arg('size'));
  const dir = arg('dir');
  const fakes = arg('fakes');
  const sqliteFile = path.join(dir, 'herald.sqlite');
  const config = loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dir, HERALD_SECRET_KEY: BENCH_SECRET_KEY });
  const database = openDatabase({ sqliteFile });
  await migrateToLatest(database.db);
  const project = await createProject(database.db, systemClock, 'bench');
  const box = createSecretBox(resolveSecretKey(config, database.dialect));
  const serviceAccount = JSON.parse(fs.readFileSync(path.join(fakes, 'fcm-service-account.json'), 'utf8')) as {
    token_uri: string;
  };
  // The stand-in's token endpoint is on loopback and is the benchmark's FCM_API_URL: trusted like it.
  const tokenUri = {
    outbound: { allowPrivateNetworks: false },
    trustedOrigins: [new URL(serviceAccount.token_uri).origin],
    extraHosts: [],
  };
  await setFcmCredentials(database.db, () => box, systemClock, project.project_id, serviceAccount, tokenUri);
  // The message reads a user property and a trigger property; `plan eq pro` holds 90% of users.
  // CAMPAIGN_BENCH_MESSAGE=shared: a message that reads no user (the same for everyone, rendered once per batch).
  const shared = process.env.CAMPAIGN_BENCH_MESSAGE === 'shared';
  const campaign = await createCampaign(database.db, systemClock, project.project_id, {
    name: 'bench',
    status: 'active',
    api_triggered: true,
    segment: { property: 'plan', op: 'eq', value: 'pro' },
    message: shared
      ? { title: 'Spring sale', body: 'Use {{ trigger.code }} today ({{ campaign.name }})' }
      : { title: 'Hi {{ user.first_name }}', body: 'Use {{ trigger.code }} today, {{ user.project_user_id }}' },
  });
  await database.close();
  const started = performance.now();
  insertAudience(sqliteFile, project.project_id, size);
  const prepared: PreparedBench = {
    projectId: project.project_id,
    secretKey: project.secret_key,
    campaignId: campaign.campaignId,
    insertSeconds: (performance.now() - started) / 1000,
  };
  fs.writeFileSync(path.join(dir, 'prepared.json'), JSON.stringify(prepared));
}

await main();
