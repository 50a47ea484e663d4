import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { dayStart, partitionName } from '../../src/db/partitions.js';
import { DAY_MS } from '../../src/lib/clock.js';
import { enforceRetention } from '../../src/retention/enforce-retention.js';
import { createUser } from '../campaigns/campaign-helpers.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { countRows, dayPartitionStarts, movableClock, runRetentionJob } from './retention-helpers.js';

/*
 * Retention stopped for longer than the days it makes ahead (RETENTION_PARTITIONS_AHEAD_DAYS, 3):
 * the next pass makes every missing day up to today and the days ahead, moves the rows that went to
 * the default partition meanwhile into their day, and says loudly when it cannot.
 */
describe.runIf(TEST_DIALECTS.includes('postgres'))('partitions after retention stopped, on postgres', () => {
  const { clock, start } = movableClock();
  const ctx = useTestContext('postgres', { overrides: { clock } });
  const defaultRowsMetric = async () => {
    const metric = await ctx().herald.metrics.registry.getSingleMetric('herald_partition_default_rows')?.get();
    return Object.fromEntries((metric?.values ?? []).map((v) => [v.labels.table, v.value]));
  };

  it('catches up on every missed day and moves the rows of the default partition into theirs', async () => {
    const { secret } = await ctx().newProject('catch-up');
    clock.t = start;
    await createUser(ctx(), 'u', {}, secret);
    const track = async (name: string) => {
      const res = await ctx().inject({
        method: 'POST',
        url: '/api/v1/events',
        headers: secret,
        payload: { project_user_id: 'u', name },
      });
      expect(res.statusCode).toBe(200);
    };
    // Migration 0016 made today and 3 days ahead; no pass runs for a week.
    clock.t = start + 5 * DAY_MS;
    await track('day-5');
    clock.t = start + 7 * DAY_MS;
    await track('day-7');
    const db = ctx().database.db;
    expect(await countRows(db, 'events_default')).toBe(2);

    await runRetentionJob(ctx(), clock);
    const days = await dayPartitionStarts(db, 'events');
    for (let k = 0; k <= 10; k++) expect(days).toContain(dayStart(start) + k * DAY_MS); // no gap, 3 ahead of day 7
    expect(await countRows(db, 'events_default')).toBe(0);
    expect(await countRows(db, partitionName('events', start + 5 * DAY_MS))).toBe(1);
    expect(await countRows(db, partitionName('events', start + 7 * DAY_MS))).toBe(1);
    // The moved partitions carry the table's indexes (built at ATTACH).
    const { rows } = await sql<{ n: number | string }>`select count(*) as n from pg_indexes
      where schemaname = current_schema() and tablename = ${partitionName('events', start + 5 * DAY_MS)}`.execute(db);
    const { rows: model } = await sql<{ n: number | string }>`select count(*) as n from pg_indexes
      where schemaname = current_schema() and tablename = ${partitionName('events', start)}`.execute(db);
    expect(Number(model[0]!.n)).toBeGreaterThanOrEqual(4);
    expect(Number(rows[0]!.n)).toBe(Number(model[0]!.n));
    const listed = await ctx().inject({ method: 'GET', url: '/api/v1/users/u/events', headers: secret });
    expect(listed.json<{ events: { name: string }[] }>().events.map((e) => e.name)).toEqual(['day-7', 'day-5']);
    expect(await defaultRowsMetric()).toMatchObject({ events: 0, deliveries: 0, trigger_deliveries: 0 });
  });

  it('reports rows it could not move, in the pass and in herald_partition_default_rows, until a later pass moves them', async () => {
    const { secret } = await ctx().newProject('stuck');
    clock.t = start + 14 * DAY_MS; // past the days the previous pass made ahead
    await createUser(ctx(), 'v', {}, secret);
    const db = ctx().database.db;
    const res = await ctx().inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: secret,
      payload: { project_user_id: 'v', name: 'e' },
    });
    expect(res.statusCode).toBe(200);
    expect(await countRows(db, 'events_default')).toBe(1);

    // A long transaction that read the default partition: no partition can be made or attached
    // (they need it exclusively) while row deletes go on.
    let release2!: () => void;
    const released2 = new Promise<void>((resolve) => (release2 = resolve));
    let holding2!: () => void;
    const held2 = new Promise<void>((resolve) => (holding2 = resolve));
    const holder2 = db.transaction().execute(async (trx) => {
      await sql`select count(*) from events_default`.execute(trx);
      holding2();
      await released2;
    });
    await held2;
    try {
      await runRetentionJob(ctx(), clock);
      expect(await defaultRowsMetric()).toMatchObject({ events: 1 });
      const report = await enforceRetention(db, { settings: ctx().config.retention, clock });
      expect(report.inDefault).toMatchObject({ events: 1 });
    } finally {
      release2();
      await holder2;
    }
    await runRetentionJob(ctx(), clock);
    expect(await countRows(db, 'events_default')).toBe(0);
    expect(await defaultRowsMetric()).toMatchObject({ events: 0 });
  });
});
