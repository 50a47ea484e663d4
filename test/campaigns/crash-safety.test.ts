import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import type { Dialect } from '../../src/db/dialect.js';
import { insertFcmAudience } from '../helpers/bulk-audience.js';
import { REPO_ROOT } from '../helpers/processes.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { configureProviders, pushOverrides, TEST_SECRET_KEY, useFakeProviders } from '../push/push-helpers.js';
import { createCampaign, triggerOk } from './campaign-helpers.js';
import { waitFor } from '../helpers/wait-for.js';

const AUDIENCE = 20_000;
const WORKER = path.join(REPO_ROOT, 'test', 'campaigns', 'fixtures', 'campaign-worker.ts');
/** Sends a worker may have under way unrecorded: job concurrency x send chunk x chunks in flight (the fixture's and the handler's defaults). */
const IN_FLIGHT_BOUND = 4 * 100 * 2;

interface Worker {
  child: ChildProcess;
  exited: Promise<unknown>;
}

function suite(dialect: Dialect, name: string, body: (h: ReturnType<typeof harness>) => void) {
  describe(`${name} on ${dialect}`, () => body(harness(dialect)));
}

function harness(dialect: Dialect) {
  const fakes = useFakeProviders();
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });
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
    const worker = { child, exited: new Promise((resolve) => child.on('exit', resolve)) };
    workers.push(worker);
    await waitFor(async () => out.includes('ready'), { timeoutMs: 30_000, what: 'worker ready' });
    return worker;
  };

  const count = async (query: ReturnType<typeof sql<{ n: number }>>) =>
    Number((await query.execute(ctx().database.db)).rows[0]!.n);
  const recorded = (triggerId: string) =>
    count(sql<{ n: number }>`select count(*) as n from trigger_deliveries where trigger_id = ${triggerId}`);
  const state = async (triggerId: string) =>
    (
      await sql<{ state: string }>`select state from campaign_triggers where id = ${triggerId}`.execute(
        ctx().database.db,
      )
    ).rows[0]!.state;

  /** Accepted sends per token at the FCM stand-in. */
  const acceptedPerToken = (tokens: string[]) => {
    const wanted = new Set(tokens);
    const counts = new Map<string, number>();
    for (const item of fakes().fcm.recorder.items)
      if (item.status === 200 && wanted.has(item.token)) counts.set(item.token, (counts.get(item.token) ?? 0) + 1);
    return counts;
  };

  const broadcast = async () => {
    fakes().fcm.recorder.clear();
    const { project, secret } = await ctx().newProject(`crash-${dialect}`);
    await configureProviders(ctx(), secret, fakes());
    const tokens = await insertFcmAudience(ctx().database.db, project.project_id, AUDIENCE, { tokenPrefix: 'crash' });
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

  const expectLedger = async (triggerId: string) => {
    const rows = await sql<{
      status: string;
      n: number;
    }>`select status, count(*) as n from trigger_deliveries where trigger_id = ${triggerId} group by status`.execute(
      ctx().database.db,
    );
    expect(rows.rows.map((r) => [r.status, Number(r.n)])).toEqual([['DELIVERY_RESULT_STATUS_ACCEPTED', AUDIENCE]]);
  };

  /** Once the stand-in has seen every worker connection close, nothing more can reach it: its counts are final. */
  const connectionsClosed = () =>
    waitFor(() => fakes().fcm.openSessions === 0, { what: "the stand-in to see the worker's connections close" });

  return { spawnWorker, recorded, state, acceptedPerToken, broadcast, expectLedger, connectionsClosed };
}

// Worker processes start and drain 20,000 sends: the waits above bound each step, and this bounds
// their sum, so a slow shared machine fails on a missing send, not on the default 60-s limit.
const PROCESS_TEST_TIMEOUT_MS = 300_000;

for (const dialect of TEST_DIALECTS) {
  suite(dialect, 'campaign fan-out survives kill -9', (h) => {
    it(
      `resumes a ${AUDIENCE}-user broadcast after SIGKILL: none missing, duplicates within the unrecorded sends`,
      async () => {
        const { tokens, triggerId } = await h.broadcast();
        const first = await h.spawnWorker();
        await waitFor(async () => (await h.recorded(triggerId)) >= AUDIENCE / 5, {
          timeoutMs: 60_000,
          what: 'a fifth of the sends',
        });
        first.child.kill('SIGKILL');
        await first.exited;
        await h.connectionsClosed();
        const acceptedAtKill = [...h.acceptedPerToken(tokens).values()].reduce((a, b) => a + b, 0);
        const unrecorded = acceptedAtKill - (await h.recorded(triggerId));
        expect(acceptedAtKill).toBeLessThan(AUDIENCE);
        expect(unrecorded).toBeGreaterThanOrEqual(0);
        expect(unrecorded).toBeLessThanOrEqual(IN_FLIGHT_BOUND);

        const second = await h.spawnWorker();
        await waitFor(async () => (await h.state(triggerId)) === 'completed', {
          timeoutMs: 120_000,
          what: 'the trigger to complete',
        });
        second.child.kill('SIGTERM');

        const perToken = h.acceptedPerToken(tokens);
        expect(tokens.filter((t) => !perToken.has(t))).toEqual([]);
        const duplicates = [...perToken.values()].reduce((a, b) => a + b, 0) - AUDIENCE;
        if (process.env.CRASH_TEST_VERBOSE) console.log({ dialect, acceptedAtKill, unrecorded, duplicates });
        expect(duplicates).toBeLessThanOrEqual(unrecorded);
        await h.expectLedger(triggerId);
      },
      PROCESS_TEST_TIMEOUT_MS,
    );
  });
}

if (TEST_DIALECTS.includes('postgres')) {
  suite('postgres', 'campaign fan-out with two workers', (h) => {
    it(
      `two worker processes drain one ${AUDIENCE}-user broadcast with no duplicate`,
      async () => {
        const { tokens, triggerId } = await h.broadcast();
        const workers = await Promise.all([
          h.spawnWorker({ CAMPAIGN_TEST_LEASE_MS: '30000' }),
          h.spawnWorker({ CAMPAIGN_TEST_LEASE_MS: '30000' }),
        ]);
        await waitFor(async () => (await h.state(triggerId)) === 'completed', {
          timeoutMs: 120_000,
          what: 'the trigger to complete',
        });
        for (const w of workers) w.child.kill('SIGTERM');
        const perToken = h.acceptedPerToken(tokens);
        expect(perToken.size).toBe(AUDIENCE);
        expect([...perToken.values()].every((n) => n === 1)).toBe(true);
        await h.expectLedger(triggerId);
      },
      PROCESS_TEST_TIMEOUT_MS,
    );
  });
}
