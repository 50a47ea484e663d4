import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll } from 'vitest';
import type { Dialect } from '../../src/db/dialect.js';
import { insertFcmAudience } from '../helpers/bulk-audience.js';
import { REPO_ROOT } from '../helpers/processes.js';
import { useTestContext } from '../helpers/test-app.js';
import { configureProviders, pushOverrides, TEST_SECRET_KEY, useFakeProviders } from '../push/push-helpers.js';
import { createCampaign, triggerOk } from '../campaigns/campaign-helpers.js';
import { waitFor } from '../helpers/wait-for.js';
import { loadConfig } from '../../src/config.js';

const WORKER = path.join(REPO_ROOT, 'test', 'campaigns', 'fixtures', 'campaign-worker.ts');
/**
 * Streams one worker may have at the provider: the HTTP/2 pool's default sessions x streams per
 * session (`PUSH_HTTP2_SESSIONS`, `PUSH_HTTP2_STREAMS`), so the bound follows the settings' defaults.
 */
const pool = loadConfig({});
export const HTTP2_IN_FLIGHT = pool.pushHttp2Sessions * pool.pushHttp2Streams;
/** Outcomes one worker may hold uncommitted besides those in flight: one group (a send chunk). */
export const GROUP_COMMIT = 100;

export interface FaultFigures {
  scenario: string;
  recipients: number;
  latencyMs: number;
  lostAcknowledged: number;
  duplicates: number;
  duplicateBound: number;
  nonTerminal: number;
  recoveryMs: number;
  note?: string;
}

/** Appends the scenario's figures to `FAULTS_REPORT` (JSON lines) when set, and prints them. */
export function report(figures: FaultFigures): void {
  console.log(`[fault] ${JSON.stringify(figures)}`);
  const file = process.env.FAULTS_REPORT;
  if (file) fs.appendFileSync(file, `${JSON.stringify({ ...figures, at: new Date().toISOString() })}\n`);
}

/** Recipient count for the suite (`FAULTS_RECIPIENTS`, default `fallback`). */
export const recipients = (fallback: number): number => Number(process.env.FAULTS_RECIPIENTS ?? fallback);

export interface Worker {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface FaultHarnessOptions {
  /** Default PostgreSQL. */
  dialect?: Dialect;
  /** PostgreSQL: a database of its own (`<prefix>_<random>`), for scenarios that alter the database itself. */
  ownDatabasePrefix?: string;
}

/** A test context (PostgreSQL unless told), the FCM stand-in, and worker processes that are killed at the end. */
export function faultHarness(options: FaultHarnessOptions = {}) {
  const fakes = useFakeProviders();
  const ctx = useTestContext(options.dialect ?? 'postgres', {
    overrides: pushOverrides(fakes),
    ...(options.ownDatabasePrefix !== undefined ? { database: { ownDatabasePrefix: options.ownDatabasePrefix } } : {}),
  });
  const workers: Worker[] = [];
  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
  });

  const spawnWorker = async (env: Record<string, string> = {}): Promise<Worker> => {
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER], {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        CAMPAIGN_TEST_TARGET: JSON.stringify(ctx().database.target),
        CAMPAIGN_TEST_CA: fakes().tls.caPem,
        FCM_API_URL: fakes().fcm.url,
        HERALD_SECRET_KEY: TEST_SECRET_KEY,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    const worker: Worker = {
      child,
      exited: new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal }))),
    };
    workers.push(worker);
    await waitFor(async () => out.includes('ready'), { timeoutMs: 60_000, what: 'worker ready', intervalMs: 100 });
    return worker;
  };

  const one = async (query: ReturnType<typeof sql<{ n: number }>>) =>
    Number((await query.execute(ctx().database.db)).rows[0]!.n);

  const broadcast = async (n: number, latencyMs: number) => {
    fakes().fcm.recorder.clear();
    const { project, secret } = await ctx().newProject(`fault-${Date.now()}`);
    await configureProviders(ctx(), secret, fakes());
    const tokens = await insertFcmAudience(ctx().database.db, project.project_id, n, {
      tokenPrefix: `slow-${latencyMs}-f`,
    });
    const campaignId = await createCampaign(
      ctx(),
      {
        segment: { property: 'plan', op: 'eq', value: 'pro' },
        message: { title: 'Sale', body: 'Hi {{ user.project_user_id }}' },
      },
      secret,
    );
    const triggerId = await triggerOk(ctx(), campaignId, { audience: { broadcast: true } }, secret);
    return { tokens, triggerId };
  };

  const recorded = (triggerId: string) =>
    one(sql<{ n: number }>`select count(*) as n from trigger_deliveries where trigger_id = ${triggerId}`);
  const state = async (triggerId: string) =>
    (
      await sql<{ state: string }>`select state from campaign_triggers where id = ${triggerId}`.execute(
        ctx().database.db,
      )
    ).rows[0]!.state;
  const waitTerminal = (triggerId: string, timeoutMs: number) =>
    waitFor(async () => ['completed', 'failed', 'canceled'].includes(await state(triggerId)), {
      timeoutMs,
      what: 'the trigger to finish',
      intervalMs: 100,
    });

  /** Accepted sends per token at the stand-in. */
  const acceptedPerToken = (tokens: string[]) => {
    const wanted = new Set(tokens);
    const counts = new Map<string, number>();
    for (const item of fakes().fcm.recorder.items)
      if (item.status === 200 && wanted.has(item.token)) counts.set(item.token, (counts.get(item.token) ?? 0) + 1);
    return counts;
  };

  /** Sends the stand-in accepted between `from` and `to` (epoch ms): during an outage, the sends that could not be recorded. */
  const acceptedBetween = (tokens: string[], from: number, to: number) => {
    const wanted = new Set(tokens);
    let n = 0;
    for (const item of fakes().fcm.recorder.items)
      if (item.status === 200 && item.at >= from && item.at <= to && wanted.has(item.token)) n++;
    return n;
  };

  /** Jobs some worker holds a lease on. */
  const leasedJobs = () => one(sql<{ n: number }>`select count(*) as n from jobs where state = 'running'`);

  /** The ledger and counters at the end: every recipient once, counters adding up, no job or trigger left open. */
  const outcome = async (triggerId: string, tokens: string[]) => {
    const perToken = acceptedPerToken(tokens);
    const missing = tokens.filter((t) => !perToken.has(t)).length;
    const duplicates = [...perToken.values()].reduce((a, b) => a + b, 0) - perToken.size;
    const ledger = await one(
      sql<{
        n: number;
      }>`select count(*) as n from trigger_deliveries where trigger_id = ${triggerId} and status = 'DELIVERY_RESULT_STATUS_ACCEPTED'`,
    );
    const nonTerminal = await one(
      sql<{ n: number }>`select count(*) as n from campaign_triggers where state in ('queued', 'running')`,
    );
    const openJobs = await one(
      sql<{ n: number }>`select count(*) as n from jobs where state in ('pending', 'running')`,
    );
    type Counters = { devices: number; accepted: number; failed: number; skipped: Record<string, number> };
    // A JSON column: parsed by the driver on PostgreSQL, text on SQLite.
    const batches = (
      await sql<{
        counters: Counters | string;
      }>`select counters from trigger_batches where trigger_id = ${triggerId}`.execute(ctx().database.db)
    ).rows.map((r) => ({
      counters: typeof r.counters === 'string' ? (JSON.parse(r.counters) as Counters) : r.counters,
    }));
    const sum = (f: (c: Counters) => number) => batches.reduce((n, b) => n + f(b.counters), 0);
    const countersAddUp =
      sum((c) => c.devices) === sum((c) => c.accepted + c.failed + Object.values(c.skipped).reduce((a, b) => a + b, 0));
    return { missing, duplicates, ledger, nonTerminal, openJobs, countersAddUp, accepted: sum((c) => c.accepted) };
  };

  return {
    ctx,
    fakes,
    spawnWorker,
    broadcast,
    recorded,
    state,
    waitTerminal,
    acceptedPerToken,
    acceptedBetween,
    leasedJobs,
    outcome,
  };
}

/** The installed PostgreSQL cluster's version directory (`/etc/postgresql/<version>`), or why there is none. */
export function postgresCluster(): { version: string } | { missing: string } {
  try {
    const versions = fs.readdirSync('/etc/postgresql');
    if (versions.length === 0) return { missing: '/etc/postgresql is empty' };
    execFileSync('which', ['pg_ctlcluster']);
    return { version: versions[0]! };
  } catch (error) {
    return {
      missing: `no local PostgreSQL cluster to restart (${error instanceof Error ? error.message : String(error)})`,
    };
  }
}

export function pgCtl(version: string, action: 'restart' | 'start'): void {
  execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', action], {
    stdio: 'inherit',
    timeout: 60_000,
  });
}

export function pgReady(): boolean {
  try {
    execFileSync('pg_isready', ['-h', '127.0.0.1', '-p', '5432', '-q']);
    return true;
  } catch {
    return false;
  }
}
