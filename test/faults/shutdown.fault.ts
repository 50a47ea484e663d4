import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { logLines, startServerProcess, type ServerProcess } from '../helpers/processes.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/wait-for.js';
import { TEST_SECRET_KEY } from '../push/push-helpers.js';
import { faultHarness, HTTP2_IN_FLIGHT, report } from './fault-harness.js';

const LATENCY_MS = 4000;
const LEASE_MS = 30_000;
const RECIPIENTS = 400;
/**
 * The shutdown budget, and when SIGTERM comes after the first round of sends reached the provider.
 * Their answers come 4 s after; the drain ends 2 s before the budget (at once under 2 s). With 5 s,
 * 0 ms puts the deadline while they are at the provider (they would end just as the budget's last
 * second does) and 2,000 ms lets them end within the drain; with 1 s they are always cut short.
 */
const CASES = [
  { budgetMs: 5000, phaseMs: 0 },
  { budgetMs: 5000, phaseMs: 2000 },
  { budgetMs: 1000, phaseMs: 700 },
];

/**
 * SIGTERM to a real server process (`src/main.ts`, the embedded database) with a short shutdown
 * budget while a broadcast's sends wait 4 s at the provider. Whatever the phase of the sends at the
 * deadline: the process exits within its budget holding no lease, duplicates stay within the sends
 * in flight, and a restarted process finishes the trigger without waiting for a lease to expire.
 */
describe('SIGTERM with a short SHUTDOWN_TIMEOUT_MS and a 4-s provider (SQLite, src/main.ts)', () => {
  const h = faultHarness({ dialect: 'sqlite' });
  const servers: ServerProcess[] = [];
  const caFile = path.join(os.tmpdir(), `herald-shutdown-ca-${process.pid}.pem`);
  afterAll(async () => {
    for (const s of servers) if (s.child.exitCode === null && s.child.signalCode === null) s.kill('SIGKILL');
    await Promise.all(servers.map((s) => s.exited));
    fs.rmSync(caFile, { force: true });
  });

  const start = async (budgetMs: number): Promise<ServerProcess> => {
    fs.writeFileSync(caFile, h.fakes().tls.caPem);
    const port = await freePort();
    const server = startServerProcess({
      ...h.ctx().database.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      FCM_API_URL: h.fakes().fcm.url,
      HERALD_SECRET_KEY: TEST_SECRET_KEY,
      NODE_EXTRA_CA_CERTS: caFile,
      SHUTDOWN_TIMEOUT_MS: String(budgetMs),
      JOB_LEASE_MS: String(LEASE_MS),
      JOB_POLL_INTERVAL_MS: '100',
    });
    servers.push(server);
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200, {
      timeoutMs: 60_000,
      what: 'the server to listen',
      intervalMs: 100,
    });
    return server;
  };

  it.each(CASES)(
    'SHUTDOWN_TIMEOUT_MS=$budgetMs, SIGTERM $phaseMs ms after a round of sends reached the provider: every lease handed back, the restart resumes at once',
    async ({ budgetMs, phaseMs }) => {
      const { tokens, triggerId } = await h.broadcast(RECIPIENTS, LATENCY_MS);
      const first = await start(budgetMs);
      // The first round of sends (two chunks of 100, as many as the HTTP/2 pool has streams) reaches
      // the provider: SIGTERM `phaseMs` after it arrived whole.
      await waitFor(() => h.fakes().fcm.delayed >= 200, { timeoutMs: 60_000, what: 'the first sends', intervalMs: 1 });
      if (phaseMs > 0) await sleep(phaseMs); // where the deadline falls is the scenario
      const termAt = Date.now();
      first.kill('SIGTERM');
      const code = await first.exited;
      const exitMs = Date.now() - termAt;
      const leased = await h.leasedJobs();
      const lostOutcomes = logLines(first.stdout()).filter((l) =>
        String(l.msg).startsWith('could not record the job outcome'),
      ).length;

      const restartAt = Date.now();
      const second = await start(budgetMs);
      // Resuming at once: once it listens, the restarted process has sends at the provider well within a lease.
      const readyAt = Date.now();
      await waitFor(() => h.fakes().fcm.delayed > 0, { timeoutMs: 60_000, what: 'the resumed sends', intervalMs: 5 });
      const resumeMs = Date.now() - readyAt;
      const finished = await h.waitTerminal(triggerId, 120_000).then(
        () => true,
        () => false,
      );
      const restartMs = Date.now() - restartAt;
      const o = await h.outcome(triggerId, tokens);
      report({
        scenario: `SIGTERM with SHUTDOWN_TIMEOUT_MS=${budgetMs}, ${phaseMs} ms into a round of sends (SQLite)`,
        recipients: RECIPIENTS,
        latencyMs: LATENCY_MS,
        lostAcknowledged: o.missing,
        duplicates: o.duplicates,
        duplicateBound: HTTP2_IN_FLIGHT,
        nonTerminal: o.nonTerminal,
        recoveryMs: restartMs,
        note:
          `exit after ${exitMs} ms (code ${code}); ${leased} jobs still leased after exit; ${lostOutcomes} job outcomes not recorded; ` +
          `lease ${LEASE_MS} ms; sends resumed ${resumeMs} ms after the restarted process listened; recovery = restart to trigger done${finished ? '' : ' (NOT finished)'}`,
      });
      second.kill('SIGTERM');
      await second.exited;
      expect(code).toBe(0);
      expect(exitMs).toBeLessThan(budgetMs + 1000);
      expect(leased).toBe(0);
      expect(finished).toBe(true);
      expect(resumeMs).toBeLessThan(10_000);
      expect(o).toMatchObject({ missing: 0, nonTerminal: 0, openJobs: 0, countersAddUp: true, accepted: RECIPIENTS });
      expect(o.duplicates).toBeLessThanOrEqual(HTTP2_IN_FLIGHT);
    },
  );
});
