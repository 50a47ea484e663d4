import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { recordDeliveries } from '../../src/campaigns/trigger-deliveries.repository.js';
import { dayStart, partitionName } from '../../src/db/partitions.js';
import { DAY_MS } from '../../src/lib/clock.js';
import { enforceRetention } from '../../src/retention/enforce-retention.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createCampaign, createUser, triggerOk, triggerStatus } from '../campaigns/campaign-helpers.js';
import {
  configureProviders,
  fcmToken,
  pushOverrides,
  registerDevice,
  sendToDevices,
  useFakeProviders,
} from '../push/push-helpers.js';
import { countRows, dayPartitionStarts, isPostgres, movableClock, runRetentionJob } from './retention-helpers.js';

const fakes = useFakeProviders();

describe.each(TEST_DIALECTS)('time partitions and retention across day boundaries on %s', (dialect) => {
  const { clock, start } = movableClock();
  const ctx = useTestContext(dialect, { overrides: async (db) => ({ ...pushOverrides(fakes)(db), clock }) });
  const runCampaignJobs = () => runJobsUntilIdle(ctx().database.db, ctx().herald.jobHandlers, { clock });
  const midnight = dayStart(start) + DAY_MS;

  it('sends, triggers and their ledger work across midnight; a running trigger keeps its ledger', async () => {
    clock.t = midnight - 10_000;
    const { project, secret } = await ctx().newProject('boundary');
    await configureProviders(ctx(), secret, fakes());
    const devices: string[] = [];
    for (const user of ['a', 'b', 'c']) {
      await createUser(ctx(), user, {}, secret);
      devices.push(await registerDevice(ctx(), secret, user, { fcm_token: fcmToken() }));
    }
    const before = await sendToDevices(ctx(), secret, [{ target: { device_id: devices[0] }, title: 'before' }]);
    const campaignId = await createCampaign(ctx(), {}, secret);
    const finished = await triggerOk(ctx(), campaignId, undefined, secret); // a broadcast, at 23:59:50
    const running = await triggerOk(ctx(), campaignId, { audience: { targets: [{ project_user_id: 'a' }] } }, secret);

    clock.t = midnight + 10_000; // the fan-out runs after midnight
    const after = await sendToDevices(ctx(), secret, [{ target: { device_id: devices[1] }, title: 'after' }]);
    // Only the broadcast's jobs run: the second trigger stays queued (unfinished).
    const queued = await ctx()
      .database.db.selectFrom('jobs')
      .select(['id', 'payload'])
      .where('state', '=', 'pending')
      .execute();
    expect(queued.length).toBeGreaterThan(0);
    await ctx()
      .database.db.updateTable('jobs')
      .set({ run_at: clock.t + 365 * DAY_MS })
      .where('state', '=', 'pending')
      .where(sql<boolean>`cast(payload as text) like ${`%${running}%`}`)
      .execute();
    await runCampaignJobs();
    const status = await triggerStatus(ctx(), campaignId, finished, secret);
    expect(status.state).toBe('completed');
    expect(status.counters).toMatchObject({ devices: 3, accepted: 3 });
    for (const m of [before[0]!, after[0]!]) {
      const res = await ctx().inject({ method: 'GET', url: `/api/v1/messages/${m.message_id}`, headers: secret });
      expect(res.statusCode).toBe(200);
    }
    const ledger = await ctx()
      .database.db.selectFrom('trigger_deliveries')
      .selectAll()
      .where('trigger_id', '=', finished)
      .execute();
    expect(ledger).toHaveLength(3);
    // Stamped with the trigger's start (before midnight) though recorded after it: one partition per trigger.
    expect(new Set(ledger.map((r) => Number(r.trigger_created_at)))).toEqual(new Set([midnight - 10_000]));
    expect(Math.min(...ledger.map((r) => Number(r.created_at)))).toBeGreaterThanOrEqual(midnight);
    // Recording the same devices again (a resumed batch) adds nothing: (trigger, device) stays unique.
    await recordDeliveries(
      ctx().database.db,
      ledger.map((r) => ({ ...r, created_at: clock.t, trigger_created_at: Number(r.trigger_created_at) })),
    );
    expect(await countRows(ctx().database.db, 'trigger_deliveries', sql`trigger_id = ${finished}`)).toBe(3);
    // The queued trigger has a ledger row already (as if its batch had started).
    await recordDeliveries(ctx().database.db, [
      { ...ledger[0]!, trigger_id: running, trigger_created_at: midnight - 10_000, batch_no: 0 },
    ]);
    if (isPostgres(ctx().database.db)) {
      expect(await countRows(ctx().database.db, partitionName('trigger_deliveries', midnight - 10_000))).toBe(4);
      expect(await countRows(ctx().database.db, partitionName('deliveries', midnight - 10_000))).toBeGreaterThan(0);
      expect(await countRows(ctx().database.db, partitionName('deliveries', midnight + 10_000))).toBeGreaterThan(0);
    }

    clock.t = midnight + 40 * DAY_MS;
    await runRetentionJob(ctx(), clock);
    const left = (trigger: string) => countRows(ctx().database.db, 'trigger_deliveries', sql`trigger_id = ${trigger}`);
    expect(await left(running)).toBe(1); // an unfinished trigger keeps its ledger, whatever its age
    // SQLite deletes the finished trigger's rows; PostgreSQL keeps the day's partition while a trigger of it runs.
    expect(await left(finished)).toBe(isPostgres(ctx().database.db) ? 3 : 0);
    expect(await countRows(ctx().database.db, 'deliveries', sql`project_id = ${project.project_id}`)).toBe(0);
    // The trigger's status outlives its ledger (counters are kept per batch).
    expect((await triggerStatus(ctx(), campaignId, finished, secret)).counters).toMatchObject({ accepted: 3 });

    await ctx()
      .database.db.updateTable('campaign_triggers')
      .set({ state: 'canceled' })
      .where('id', '=', running)
      .execute();
    await runRetentionJob(ctx(), clock);
    expect(await left(running)).toBe(0);
    expect(await left(finished)).toBe(0);
    if (isPostgres(ctx().database.db))
      expect(await dayPartitionStarts(ctx().database.db, 'trigger_deliveries')).not.toContain(dayStart(midnight - 1));
  });

  it('rows outside every partition land in the default one and expire from it in chunks', async () => {
    clock.t = start - 200 * DAY_MS; // no partition that far back
    const { secret } = await ctx().newProject('default-partition');
    await createUser(ctx(), 'u', {}, secret);
    const track = async () =>
      (
        await ctx().inject({
          method: 'POST',
          url: '/api/v1/events',
          headers: secret,
          payload: { project_user_id: 'u', name: 'e' },
        })
      ).statusCode;
    expect(await track()).toBe(200);
    clock.t = start;
    expect(await track()).toBe(200);
    if (isPostgres(ctx().database.db)) expect(await countRows(ctx().database.db, 'events_default')).toBe(1);
    await runRetentionJob(ctx(), clock);
    const res = await ctx().inject({ method: 'GET', url: '/api/v1/users/u/events', headers: secret });
    expect(res.json<{ events: unknown[] }>().events).toHaveLength(1);
    if (isPostgres(ctx().database.db)) expect(await countRows(ctx().database.db, 'events_default')).toBe(0);
  });
});

describe.runIf(TEST_DIALECTS.includes('postgres'))('dropping partitions on postgres', () => {
  const { clock, start } = movableClock();
  const ctx = useTestContext('postgres', { overrides: { clock } });

  it('waits at most the lock timeout behind a long reader, then drops on the next pass', async () => {
    clock.t = start;
    const { secret } = await ctx().newProject('lock');
    await createUser(ctx(), 'u', {}, secret);
    const tracked = await ctx().inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: secret,
      payload: { project_user_id: 'u', name: 'e' },
    });
    expect(tracked.statusCode).toBe(200);
    const db = ctx().database.db;
    clock.t = start + 92 * DAY_MS;
    // A long transaction that read the table holds a lock the drop needs.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let reading!: () => void;
    const readDone = new Promise<void>((resolve) => (reading = resolve));
    const reader = db.transaction().execute(async (trx) => {
      await sql`select count(*) from events`.execute(trx);
      reading();
      await released;
    });
    await readDone;
    try {
      const began = Date.now();
      const blocked = await enforceRetention(db, { settings: ctx().config.retention, clock });
      // One create and one drop attempt, each waiting at most 3 s, instead of waiting for the reader.
      expect(Date.now() - began).toBeLessThan(15_000);
      expect(blocked.dropped).not.toContain(partitionName('events', start));
      expect(await dayPartitionStarts(db, 'events')).toContain(dayStart(start));
    } finally {
      release();
      await reader;
    }
    const next = await enforceRetention(db, { settings: ctx().config.retention, clock });
    expect(next.dropped).toContain(partitionName('events', start));
    expect(await countRows(db, 'events')).toBe(0);
  });
});
