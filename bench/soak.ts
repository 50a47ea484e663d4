// npm run test:soak: three Herald instances (`bin/herald serve`, each API and worker) on one fresh
// PostgreSQL database, the provider stand-ins (`bin/herald fake-providers`) in their own process,
// and mixed traffic spread over the instances for SOAK_SECONDS (default 300; CI runs 60): user
// upserts, events, direct sends, targeted and broadcast campaign triggers, A2A streams. Reports the
// error rate (must be 0), p50/p99 latency per operation, each instance's RSS over time (must stay
// flat) and the database's growth. Exits 1 when a requirement fails. `-- --write` puts the report
// in docs/scaling.md ("Soak run").
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { systemClock } from '../src/lib/clock.js';
import { createProject } from '../src/projects/projects.service.js';
import { setFcmCredentials } from '../src/push/credentials/credentials.service.js';
import { createSecretBox, resolveSecretKey } from '../src/crypto/secret-box.js';
import { markdownTable, SCALING_MD, writeBenchmarkSection } from './lib/bench-report.js';
import { freePort, startProcess, waitForHttp, type BenchProcess } from './lib/processes.js';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 300);
const INSTANCES = 3;
const CLIENTS = Number(process.env.SOAK_CLIENTS ?? 12);
const USERS = 2000;
const SERVER_URL =
  process.env.SOAK_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SECRET_KEY = '22'.repeat(32);
const SAMPLE_MS = 5000;
/** RSS is flat when its peak in the second half of the run is at most this much above the first half's. */
const RSS_GROWTH_LIMIT = 0.2;

type Op =
  'user upsert' | 'event' | 'send' | 'trigger (10 targets)' | 'broadcast trigger' | 'A2A stream' | 'user events read';

interface Stats {
  latencies: Map<Op, number[]>;
  errors: Map<Op, number>;
  firstErrors: string[];
}

const pct = (values: number[], p: number): number => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const rssMb = (pid: number | undefined): number => {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
  } catch {
    return Number.NaN;
  }
};

async function admin<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

async function startFakes(dir: string): Promise<{ proc: BenchProcess; fcmUrl: string }> {
  const proc = startProcess(['bin/herald', 'fake-providers', '--dir', dir], { LOG_LEVEL: 'silent' });
  const deadline = Date.now() + 30_000;
  while (!/FCM_API_URL=(\S+)/.test(proc.output()) && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 100));
  const fcmUrl = /FCM_API_URL=(\S+)/.exec(proc.output())?.[1];
  if (!fcmUrl) throw new Error(`fake providers did not start:\n${proc.output()}`);
  return { proc, fcmUrl };
}

/** A project with FCM credentials for the stand-in, USERS users with one device each, two campaigns. */
async function seed(dbUrl: string, fakesDir: string) {
  const database = openDatabase({ url: dbUrl, poolSize: 2 });
  try {
    await migrateToLatest(database.db);
    const project = await createProject(database.db, systemClock, 'soak');
    const config = loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: dbUrl, HERALD_SECRET_KEY: SECRET_KEY });
    const box = createSecretBox(resolveSecretKey(config, database.dialect));
    const serviceAccount = JSON.parse(fs.readFileSync(path.join(fakesDir, 'fcm-service-account.json'), 'utf8')) as {
      token_uri: string;
    };
    await setFcmCredentials(database.db, () => box, systemClock, project.project_id, serviceAccount, {
      outbound: { allowPrivateNetworks: false },
      trustedOrigins: [new URL(serviceAccount.token_uri).origin],
      extraHosts: [],
    });
    return project;
  } finally {
    await database.close();
  }
}

async function main(): Promise<void> {
  const write = process.argv.includes('--write');
  const dbName = `herald_soak_${process.pid}`;
  const dbUrl = new URL(SERVER_URL);
  dbUrl.pathname = `/${dbName}`;
  await admin(SERVER_URL, `create database ${dbName}`);
  const fakesDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-soak-fakes-'));
  const instances: Array<{ proc: BenchProcess; base: string; rss: number[] }> = [];
  let fakes: BenchProcess | undefined;
  try {
    const started = await startFakes(fakesDir);
    fakes = started.proc;
    const project = await seed(dbUrl.toString(), fakesDir);
    for (let i = 0; i < INSTANCES; i++) {
      const port = await freePort();
      const proc = startProcess(['bin/herald', 'serve'], {
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: dbUrl.toString(),
        DATABASE_POOL_SIZE: '10',
        HERALD_SECRET_KEY: SECRET_KEY,
        LOG_LEVEL: 'warn',
        FCM_API_URL: started.fcmUrl,
        FCM_QUOTA_PER_MINUTE: '100000000',
        NODE_EXTRA_CA_CERTS: path.join(fakesDir, 'ca.pem'),
        // The soak measures errors, not the limiter: every class far above the offered load.
        RATE_LIMIT_DEFAULTS:
          'management=1000000/1000000,client=1000000/1000000,send=1000000/1000000,trigger=1000000/1000000,a2a=1000000/1000000',
      });
      instances.push({ proc, base: `http://127.0.0.1:${port}`, rss: [] });
    }
    await Promise.all(instances.map((i) => waitForHttp(`${i.base}/readyz`, 60_000)));

    const secret = {
      'x-service-project-id': project.project_id,
      'x-service-api-key': project.secret_key,
      'content-type': 'application/json',
    };
    const publicKey = { ...secret, 'x-service-api-key': project.public_key };
    let n = 0;
    const call = async (base: string, method: string, url: string, body: unknown, headers = secret) => {
      const res = await fetch(`${base}${url}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 200)}`);
      return text;
    };

    // Setup through the API: users with devices (spread over the instances) and two campaigns.
    for (let i = 0; i < USERS; i += 50)
      await Promise.all(
        Array.from({ length: Math.min(50, USERS - i) }, (_, k) => {
          const u = i + k;
          const base = instances[u % INSTANCES]!.base;
          return call(
            base,
            'POST',
            '/api/v1/devices',
            {
              project_user_id: `user-${u}`,
              platform: 'android',
              fcm_token: `soak${u}x${Math.random().toString(16).slice(2)}`,
            },
            publicKey,
          );
        }),
      );
    const campaign = async (segment: unknown) =>
      (
        JSON.parse(
          await call(instances[0]!.base, 'POST', '/api/v1/campaigns', {
            name: 'soak',
            status: 'active',
            api_triggered: true,
            ...(segment ? { segment } : {}),
            message: { title: 'Hi {{ user.project_user_id }}', body: 'Code {{ trigger.code }}' },
          }),
        ) as { campaign_id: string }
      ).campaign_id;
    const targeted = await campaign(undefined);
    const broadcast = await campaign({ property: 'plan', op: 'eq', value: 'pro' });
    const sizeBefore = Number(
      (await admin<{ s: string }>(dbUrl.toString(), 'select pg_database_size(current_database()) as s'))[0]!.s,
    );

    const stats: Stats = { latencies: new Map(), errors: new Map(), firstErrors: [] };
    const record = async (op: Op, run: () => Promise<unknown>) => {
      const t0 = performance.now();
      try {
        await run();
        const list = stats.latencies.get(op) ?? [];
        list.push(performance.now() - t0);
        stats.latencies.set(op, list);
      } catch (error) {
        stats.errors.set(op, (stats.errors.get(op) ?? 0) + 1);
        if (stats.firstErrors.length < 10) stats.firstErrors.push(`${op}: ${String(error)}`);
      }
    };
    const triggerIds: Array<{ campaignId: string; triggerId: string }> = [];
    const a2aStream = async (base: string, id: number) => {
      const res = await fetch(`${base}/a2a`, {
        method: 'POST',
        headers: {
          'x-api-key': project.secret_key,
          'content-type': 'application/json',
          'a2a-version': '1.0',
          accept: 'text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'SendStreamingMessage',
          params: {
            message: {
              messageId: `soak-${process.pid}-${id}`,
              role: 'ROLE_USER',
              parts: [{ data: { skill: 'create-user', projectUserId: `a2a-${id % 500}`, properties: { via: 'a2a' } } }],
            },
          },
        }),
      });
      const text = await res.text();
      if (res.status !== 200 || !text.includes('TASK_STATE_COMPLETED'))
        throw new Error(`A2A stream: ${res.status} ${text.slice(0, 300)}`);
    };

    const deadline = Date.now() + SECONDS * 1000;
    const sampler = setInterval(() => {
      for (const i of instances) i.rss.push(rssMb(i.proc.child.pid));
    }, SAMPLE_MS);
    for (const i of instances) i.rss.push(rssMb(i.proc.child.pid));
    let lastBroadcast = 0;
    const client = async (c: number) => {
      while (Date.now() < deadline) {
        const id = ++n;
        const base = instances[id % INSTANCES]!.base;
        const u = (id * 7919) % USERS;
        const roll = id % 20;
        if (c === 0 && Date.now() - lastBroadcast > 30_000) {
          lastBroadcast = Date.now();
          await record('broadcast trigger', async () => {
            const body = await call(base, 'POST', `/api/v1/campaigns/${broadcast}:trigger`, {
              audience: { broadcast: true },
              properties: { code: `B${id}` },
            });
            triggerIds.push({
              campaignId: broadcast,
              triggerId: (JSON.parse(body) as { trigger_id: string }).trigger_id,
            });
          });
        } else if (roll < 6)
          await record('user upsert', () =>
            call(base, 'POST', '/api/v1/users', {
              project_user_id: `user-${u}`,
              properties: { plan: u % 10 === 0 ? 'free' : 'pro', seen: id },
            }),
          );
        else if (roll < 11)
          await record('event', () =>
            call(
              base,
              'POST',
              '/api/v1/events',
              { project_user_id: `user-${u}`, name: 'soak', properties: { n: id } },
              publicKey,
            ),
          );
        else if (roll < 13)
          await record('user events read', () =>
            call(base, 'GET', `/api/v1/users/user-${u}/events?limit=10`, undefined),
          );
        else if (roll < 16)
          await record('send', () =>
            call(base, 'POST', '/api/v1/send-push-notifications', {
              push_notifications: [{ target: { project_user_id: `user-${u}` }, title: 'Soak', body: `n ${id}` }],
            }),
          );
        else if (roll < 17)
          await record('trigger (10 targets)', async () => {
            const body = await call(base, 'POST', `/api/v1/campaigns/${targeted}:trigger`, {
              audience: {
                targets: Array.from({ length: 10 }, (_, k) => ({ project_user_id: `user-${(u + k) % USERS}` })),
              },
              properties: { code: `T${id}` },
            });
            triggerIds.push({
              campaignId: targeted,
              triggerId: (JSON.parse(body) as { trigger_id: string }).trigger_id,
            });
          });
        else await record('A2A stream', () => a2aStream(base, id));
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
    clearInterval(sampler);

    // Every trigger must finish with every delivery accepted by the stand-in.
    const drainDeadline = Date.now() + 120_000;
    let unfinished = triggerIds.length;
    let failedDeliveries = 0;
    while (Date.now() < drainDeadline) {
      const states = await Promise.all(
        triggerIds.map(
          async ({ campaignId, triggerId }) =>
            JSON.parse(
              await call(instances[0]!.base, 'GET', `/api/v1/campaigns/${campaignId}/triggers/${triggerId}`, undefined),
            ) as {
              state: string;
              counters: { failed: number };
            },
        ),
      );
      unfinished = states.filter((s) => s.state !== 'completed').length;
      failedDeliveries = states.reduce((sum, s) => sum + s.counters.failed, 0);
      if (unfinished === 0) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const sizeAfter = Number(
      (await admin<{ s: string }>(dbUrl.toString(), 'select pg_database_size(current_database()) as s'))[0]!.s,
    );
    const rows = await admin<{ relname: string; n: string }>(
      dbUrl.toString(),
      'select relname, n_live_tup as n from pg_stat_user_tables where n_live_tup > 0 order by n_live_tup desc limit 8',
    );

    const total = [...stats.latencies.values()].reduce((s, l) => s + l.length, 0);
    const errors = [...stats.errors.values()].reduce((s, e) => s + e, 0);
    // A leak makes new highs late in the run; the heap's warm-up and GC swings make highs early too.
    const flat = instances.map((i) => {
      const half = Math.floor(i.rss.length / 2);
      const early = Math.max(...i.rss.slice(0, half));
      const late = Math.max(...i.rss.slice(half));
      return { early, late, growth: (late - early) / early };
    });
    const ops: Op[] = [
      'user upsert',
      'user events read',
      'event',
      'send',
      'trigger (10 targets)',
      'broadcast trigger',
      'A2A stream',
    ];
    const report = [
      `Command: \`SOAK_SECONDS=${SECONDS} npm run test:soak\` (bench/soak.ts). ${INSTANCES} instances of \`bin/herald serve\` (API and worker each, LOG_LEVEL=warn, rate limits raised so the limiter runs but never refuses) on one fresh PostgreSQL ${
        (await admin<{ v: string }>(SERVER_URL, "select current_setting('server_version') as v"))[0]!.v
      } database; the FCM stand-in (\`bin/herald fake-providers\`) in its own process; ${CLIENTS} clients in closed loop spread round-robin over the instances; ${USERS} users with one FCM device each, registered through the API first. Mix per 20 requests: 6 user upserts, 5 events, 2 reads of a user's events, 3 direct sends, 1 campaign trigger to 10 targets, 3 A2A SendStreamingMessage (create-user skill) read to the end; plus a broadcast trigger (90% of users) every 30 s. ${os.cpus().length} cores shared with other work, Node ${process.version}. Measured ${new Date().toISOString().slice(0, 10)}.`,
      '',
      `Requests: ${total + errors} in ${SECONDS} s (${((total + errors) / SECONDS).toFixed(0)}/s), errors: ${errors} (${((100 * errors) / Math.max(1, total + errors)).toFixed(3)}%). Triggers: ${triggerIds.length}, unfinished after the run: ${unfinished}, failed deliveries: ${failedDeliveries}.`,
      '',
      markdownTable(
        ['Operation', 'Requests', 'Errors', 'p50 ms', 'p99 ms'],
        ops.map((op) => {
          const l = stats.latencies.get(op) ?? [];
          return [op, l.length, stats.errors.get(op) ?? 0, pct(l, 50).toFixed(1), pct(l, 99).toFixed(1)];
        }),
      ),
      '',
      `RSS per instance (MB), sampled every ${SAMPLE_MS / 1000} s:`,
      '',
      markdownTable(
        ['Instance', 'Samples (every 5th)', 'Peak, first half', 'Peak, second half', 'Growth'],
        instances.map((i, k) => [
          k + 1,
          i.rss.filter((_, j) => j % 5 === 0).join(' '),
          flat[k]!.early.toFixed(0),
          flat[k]!.late.toFixed(0),
          `${(100 * flat[k]!.growth).toFixed(1)}%`,
        ]),
      ),
      '',
      `Database: ${(sizeBefore / 1048576).toFixed(1)} MB after setup, ${(sizeAfter / 1048576).toFixed(1)} MB after the run (+${((sizeAfter - sizeBefore) / 1048576).toFixed(1)} MB, ${((sizeAfter - sizeBefore) / 1048576 / (SECONDS / 60)).toFixed(2)} MB/min). Largest tables by live rows: ${rows.map((r) => `${r.relname} ${r.n}`).join(', ')}.`,
    ].join('\n');
    console.log(report);
    if (stats.firstErrors.length > 0) console.error(`first errors:\n${stats.firstErrors.join('\n')}`);
    const problems = [
      ...(errors > 0 ? [`error rate ${errors}/${total + errors} (must be 0)`] : []),
      ...(unfinished > 0 ? [`${unfinished} triggers unfinished`] : []),
      ...(failedDeliveries > 0 ? [`${failedDeliveries} failed deliveries`] : []),
      ...flat.flatMap((f, k) =>
        f.growth > RSS_GROWTH_LIMIT
          ? [`instance ${k + 1} RSS grew ${(100 * f.growth).toFixed(0)}% (limit ${100 * RSS_GROWTH_LIMIT}%)`]
          : [],
      ),
    ];
    if (write && problems.length === 0) writeBenchmarkSection('Soak run', report, { file: SCALING_MD });
    if (problems.length > 0) {
      console.error(`SOAK FAILED: ${problems.join('; ')}`);
      process.exitCode = 1;
    }
  } finally {
    await Promise.all(instances.map((i) => i.proc.stop()));
    await fakes?.stop();
    fs.rmSync(fakesDir, { recursive: true, force: true });
    await admin(SERVER_URL, `drop database if exists ${dbName} with (force)`);
  }
}

await main();
