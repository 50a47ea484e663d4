import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.js';
import {
  allowConnections,
  FAULT_DATABASE_PREFIX,
  faultDatabaseOf,
  makeReadOnly,
  makeWritable,
  refuseConnections,
} from './database-faults.js';
import { faultHarness, GROUP_COMMIT, HTTP2_IN_FLIGHT, recipients, report } from './fault-harness.js';

const OUTAGE_MS = 10_000;
const LATENCY_MS = 2000;
const LEASE_MS = '30000';
/** The trigger must be done this soon after the database is back. */
const FINISH_WITHIN_MS = 60_000;

/**
 * The database itself out for 10 s in the middle of a fan-out on two worker processes, in the two
 * ways a running PostgreSQL stops serving without stopping: refusing connections (SQLSTATE 55000,
 * what `ALTER DATABASE ... ALLOW_CONNECTIONS false` or a maintenance window gives) and answering
 * writes with "read-only transaction" (25006, a client still reaching the demoted node after a
 * failover). Each runs on a database of its own, never the shared `test` one. Asserted: no
 * recipient lost, duplicates within the sends in flight at the fault, the sends that went out while
 * outcomes could not be recorded bounded by the streams in flight (the fan-out waits for its ledger:
 * nothing goes out once the outage shows), and the trigger done within a minute of the database coming back.
 */
describe('database outage mid-fan-out, two workers (PostgreSQL)', () => {
  const h = faultHarness({ ownDatabasePrefix: FAULT_DATABASE_PREFIX });

  const scenario = async (
    name: string,
    fault: { begin(db: string): Promise<void>; end(db: string): Promise<void> },
  ) => {
    const database = faultDatabaseOf(h.ctx().database.target.url);
    const n = recipients(3000);
    const { tokens, triggerId } = await h.broadcast(n, LATENCY_MS);
    const workers = await Promise.all([0, 1].map(() => h.spawnWorker({ CAMPAIGN_TEST_LEASE_MS: LEASE_MS })));
    const startedAt = Date.now();
    await waitFor(async () => (await h.recorded(triggerId)) >= n / 4, {
      timeoutMs: 120_000,
      what: 'a quarter of the sends',
      intervalMs: 100,
    });
    const outageAt = Date.now();
    try {
      await fault.begin(database);
      // The fault's length is the scenario itself, not a condition to await.
      await sleep(OUTAGE_MS);
    } finally {
      await fault.end(database);
    }
    const backAt = Date.now();
    // Sends go out again once a commit gets through (its retry waits at most 2 s), answered 2 s later.
    const resumed = await waitFor(() => h.fakes().fcm.recorder.items.find((i) => i.status === 200 && i.at > backAt), {
      timeoutMs: 60_000,
      what: 'sends after the database came back',
      intervalMs: 20,
    }).then(
      (item) => item.at - backAt,
      () => undefined,
    );
    const finished = await h.waitTerminal(triggerId, 150_000).then(
      () => true,
      () => false,
    );
    const finishMs = Date.now() - backAt;
    const o = await h.outcome(triggerId, tokens);
    const unsaved = h.acceptedBetween(tokens, outageAt, backAt);
    // Sends under way when the outage began end within one provider latency (2 s); a chunk started
    // just before the first failed commit showed the outage, within two. After that nothing is sent.
    const lateInOutage = h.acceptedBetween(tokens, outageAt + 2 * LATENCY_MS + 1000, backAt);
    const bound = workers.length * (HTTP2_IN_FLIGHT + GROUP_COMMIT);
    // Sent while nothing could be recorded: the streams in flight when the outage began, and at most
    // one more chunk per stream slot begun before the first failed commit showed the outage.
    const unsavedBound = workers.length * 2 * HTTP2_IN_FLIGHT;
    report({
      scenario: name,
      recipients: n,
      latencyMs: LATENCY_MS,
      lostAcknowledged: o.missing,
      duplicates: o.duplicates,
      duplicateBound: bound,
      nonTerminal: o.nonTerminal,
      recoveryMs: finishMs,
      note:
        `${finished ? 'finished' : 'NOT finished within 150 s'}; ${unsaved} sends accepted during the ${OUTAGE_MS} ms outage (bound ${unsavedBound}), ` +
        `${lateInOutage} of them after its first ${2 * LATENCY_MS + 1000} ms; ` +
        `first send accepted ${resumed ?? 'never'} ms after the database came back; whole fan-out ${Date.now() - startedAt} ms; lease ${LEASE_MS} ms; recovery = database back to trigger done`,
    });
    expect(resumed).toBeLessThan(10_000);
    expect(finished).toBe(true);
    expect(finishMs).toBeLessThan(FINISH_WITHIN_MS);
    expect(o).toMatchObject({ missing: 0, nonTerminal: 0, openJobs: 0, countersAddUp: true, ledger: n, accepted: n });
    expect(o.duplicates).toBeLessThanOrEqual(bound);
    expect(unsaved).toBeLessThanOrEqual(unsavedBound);
    expect(lateInOutage).toBe(0);
    for (const w of workers) w.child.kill('SIGTERM');
    await Promise.all(workers.map((w) => w.exited));
  };

  it('the database refuses connections for 10 s (ALLOW_CONNECTIONS false, sessions cut), provider at 2 s', () =>
    scenario('database refusing connections 10 s mid-fan-out (two workers)', {
      begin: refuseConnections,
      end: allowConnections,
    }));

  it('the database turns read-only for 10 s (as after a failover), provider at 2 s', () =>
    scenario('database read-only 10 s mid-fan-out (two workers)', { begin: makeReadOnly, end: makeWritable }));
});
