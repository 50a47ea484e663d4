// bench:console — how long the console's pages take to load in Chromium over a project with 1M users
// (one FCM device each) and 1M deliveries (one trigger's), on the embedded SQLite default.
// Usage: npm run bench:console [-- --users N] [-- --deliveries N] [-- --rounds N] [-- --no-write]
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import type { Page } from 'playwright-core';
import { newMessageId } from '../src/push/message-id.js';
import { DeliveryStatus } from '../src/push/push.types.js';
import { launchChromium } from '../test/browser/chromium.js';
import type { PreparedBench } from './campaign-prepare.js';
import { median, numberArg } from './lib/bench-args.js';
import { commandLine, markdownTable, writeBenchmarkSection } from './lib/bench-report.js';
import { freePort, startProcess, waitForHttp, type BenchProcess } from './lib/processes.js';

const USERS = numberArg('users', 1_000_000);
const DELIVERIES = numberArg('deliveries', 1_000_000);
const ROUNDS = numberArg('rounds', 5);
const BUDGET_MS = 1000;
const flag = (name: string) => process.argv.includes(`--${name}`);

function run(args: string[], env: Record<string, string> = {}): Promise<string> {
  const proc = startProcess(args, env);
  return new Promise((resolve, reject) =>
    proc.child.on('exit', (code) =>
      code === 0 ? resolve(proc.output()) : reject(new Error(`${args.join(' ')} failed (${code}):\n${proc.output()}`)),
    ),
  );
}

/**
 * One trigger's deliveries spread over the last two hours: 95% accepted, the rest failed for a few
 * reasons, as a broadcast of that size leaves them. Written straight to the file (Herald stopped).
 */
function insertDeliveries(sqliteFile: string, projectId: string, triggerId: string, n: number): string {
  const raw = new SQLite(sqliteFile);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = OFF');
  const insert = raw.prepare(
    `insert into deliveries (message_id, project_id, target_type, target_id, device_id, provider, status, failure_reason,
       provider_message_id, trigger_id, attempts, created_at, completed_at)
     values (?, ?, 'project_user_id', ?, ?, 'fcm', ?, ?, ?, ?, 1, ?, ?)`,
  );
  const failures = [
    [DeliveryStatus.TOKEN_UNREGISTERED, 'UNREGISTERED'],
    [DeliveryStatus.TOKEN_INVALID, 'INVALID_ARGUMENT'],
    [DeliveryStatus.RATE_LIMITED, 'QUOTA_EXCEEDED'],
  ] as const;
  const start = Date.now() - 2 * 3600_000;
  let sample = '';
  const chunk = raw.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const at = start + Math.floor((i / n) * 2 * 3600_000);
      const id = newMessageId(at);
      const failure = i % 20 === 0 ? failures[(i / 20) % failures.length]! : null;
      insert.run(
        id,
        projectId,
        `user-${i % USERS}`,
        randomUUID(),
        failure ? failure[0] : DeliveryStatus.ACCEPTED,
        failure ? failure[1] : null,
        failure ? null : `projects/bench/messages/${i}`,
        triggerId,
        at,
        at + 40,
      );
      if (i === Math.floor(n / 2)) sample = id;
    }
  });
  for (let i = 0; i < n; i += 20_000) chunk(i, Math.min(n, i + 20_000));
  raw.pragma('wal_checkpoint(TRUNCATE)');
  raw.close();
  return sample;
}

interface ConsolePage {
  name: string;
  url: string;
  /** What is on screen once the page has its data. */
  ready: string;
}

/** Navigates and waits for the page's data on screen; milliseconds from navigation start. */
async function load(page: Page, base: string, target: ConsolePage): Promise<number> {
  const started = performance.now();
  await page.goto(`${base}${target.url}`, { waitUntil: 'commit' });
  // A refusal shows as an alert: waiting for either fails fast instead of timing out.
  await page.waitForSelector(`${target.ready}, [role=alert]`, { timeout: 60_000 });
  const errors = await page.locator('[role=alert]').allTextContents();
  if (errors.length > 0) throw new Error(`${target.name}: ${errors.join('; ')}`);
  return performance.now() - started;
}

async function main(): Promise<void> {
  const loadBefore = os.loadavg()[0]!;
  const fakesDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-fakes-'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-console-'));
  const fake = startProcess(['--import', 'tsx', 'src/cli/main.ts', 'fake-providers', '--dir', fakesDir], {
    LOG_LEVEL: 'silent',
  });
  let herald: BenchProcess | undefined;
  let browser: Awaited<ReturnType<typeof launchChromium>> | undefined;
  try {
    const deadline = Date.now() + 30_000;
    while (!/FCM_API_URL=(\S+)/.test(fake.output()) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    const fcmUrl = /FCM_API_URL=(\S+)/.exec(fake.output())?.[1];
    if (!fcmUrl) throw new Error(`fake providers did not start:\n${fake.output()}`);

    console.log(`preparing ${USERS} users with a device each`);
    await run([
      '--import',
      'tsx',
      'bench/campaign-prepare.ts',
      '--size',
      String(USERS),
      '--dir',
      dir,
      '--fakes',
      fakesDir,
    ]);
    const prepared = JSON.parse(fs.readFileSync(path.join(dir, 'prepared.json'), 'utf8')) as PreparedBench;
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const startHerald = async () => {
      herald = startProcess(['--import', './src/boot/ts-resolve.ts', 'src/main.ts'], {
        DATA_DIR: dir,
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        HERALD_SECRET_KEY: '11'.repeat(32),
        FCM_API_URL: fcmUrl,
        NODE_EXTRA_CA_CERTS: path.join(fakesDir, 'ca.pem'),
      });
      await waitForHttp(`${base}/readyz`, 120_000).catch((error: unknown) => {
        throw new Error(`${(error as Error).message}\n${herald?.output() ?? ''}`, { cause: error });
      });
    };
    const headers = {
      'X-Service-Project-ID': prepared.projectId,
      'X-Service-API-Key': prepared.secretKey,
      'Content-Type': 'application/json',
    };
    await startHerald();
    // A real trigger (three users), then its deliveries grown to DELIVERIES while Herald is stopped.
    const triggered = await fetch(`${base}/api/v1/campaigns/${prepared.campaignId}:trigger`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        audience: { targets: [1, 2, 3].map((i) => ({ project_user_id: `user-${i}` })) },
        properties: { code: 'BENCH' },
      }),
    });
    const { trigger_id: triggerId } = (await triggered.json()) as { trigger_id: string };
    for (let state = ''; state !== 'completed';) {
      await new Promise((r) => setTimeout(r, 200));
      const status = await fetch(`${base}/api/v1/campaigns/${prepared.campaignId}/triggers/${triggerId}`, { headers });
      state = ((await status.json()) as { state: string }).state;
      if (state === 'failed' || state === 'canceled') throw new Error(`bench trigger ${state}`);
    }
    await herald!.stop();
    console.log(`inserting ${DELIVERIES} deliveries`);
    const messageId = insertDeliveries(path.join(dir, 'herald.sqlite'), prepared.projectId, triggerId, DELIVERIES);
    await startHerald();

    browser = await launchChromium();
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 1280, height: 860 });
    await page.goto(`${base}/console/`);
    await page.fill('#project-id', prepared.projectId);
    await page.fill('#secret-key', prepared.secretKey);
    await page.click('button[type=submit]');
    await page.waitForSelector('nav[aria-label="Main"]');

    const filter = encodeURIComponent(JSON.stringify({ all: [{ property: 'plan', op: 'eq', value: 'free' }] }));
    const campaign = `/console/campaigns/${prepared.campaignId}`;
    const pages: ConsolePage[] = [
      { name: 'baseline: console shell, no API call', url: '/console/no-such-page', ready: 'h1:text-is("Not found")' },
      { name: 'users, first page', url: '/console/users', ready: 'tbody tr' },
      { name: 'users by id prefix', url: '/console/users?prefix=user-99999', ready: 'tbody tr' },
      { name: 'users by condition (plan = free)', url: `/console/users?filter=${filter}`, ready: 'tbody tr' },
      { name: 'one user', url: '/console/users/user-500000', ready: 'h2:text-is("Devices (1)")' },
      { name: 'campaign (form, triggers)', url: campaign, ready: '#triggers-heading ~ ul li' },
      {
        name: `trigger over ${DELIVERIES.toLocaleString('en-US')} deliveries (chart)`,
        url: `${campaign}/triggers/${triggerId}`,
        ready: '[data-testid=sends-chart] rect.bar-sent',
      },
      { name: 'message by id', url: `/console/messages?id=${messageId}`, ready: '[data-testid=message]' },
      { name: 'push credentials', url: '/console/credentials', ready: '.card .badge' },
    ];
    for (const target of pages) await load(page, base, target); // warm-up
    const times = new Map<string, number[]>(pages.map((p) => [p.name, []]));
    // Rounds alternate over the pages, so a busy moment of the shared machine spreads over all of them.
    for (let round = 0; round < ROUNDS; round++)
      for (const target of pages) times.get(target.name)!.push(await load(page, base, target));

    const baseline = median(times.get(pages[0]!.name)!);
    const rows = pages.map((p) => {
      const t = times.get(p.name)!;
      const m = median(t);
      return [
        p.name,
        m.toFixed(0),
        Math.max(...t).toFixed(0),
        (m / baseline).toFixed(1),
        m < BUDGET_MS ? 'yes' : '**no**',
      ];
    });
    const report = [
      `Command: \`${commandLine('bench:console')}\`. Herald (\`src/main.ts\`, API and worker, \`LOG_LEVEL=warn\`, default rate limits) on a new embedded SQLite file holding one project with ${USERS.toLocaleString('en-US')} users (one FCM device each, written by bench/campaign-prepare.ts) and ${DELIVERIES.toLocaleString('en-US')} deliveries of one trigger over two hours (5% failed for three reasons). Headless Debian Chromium on the same machine, signed in; each load is a full navigation (\`page.goto\`) until the page's data is on screen (the selector in bench/console.ts), ${ROUNDS} rounds alternating over the pages after one warm-up round. The baseline is the console's own shell (HTML, script and styles from Herald's memory, no API call). ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}, 1-minute load average at start ${loadBefore.toFixed(1)}. Measured ${new Date().toISOString().slice(0, 10)}.`,
      '',
      markdownTable(['page', 'median ms', 'max ms', 'x baseline', `under ${BUDGET_MS} ms`], rows),
      '',
      `Target: every page under ${BUDGET_MS} ms at this size.`,
    ].join('\n');
    console.log(report);
    if (!flag('no-write')) writeBenchmarkSection('Console', report);
  } finally {
    await browser?.close();
    await herald?.stop();
    await fake.stop();
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(fakesDir, { recursive: true, force: true });
  }
}

await main();
