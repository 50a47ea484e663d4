import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { DAY_MS } from '../../src/lib/clock.js';
import { enforceRetention } from '../../src/retention/enforce-retention.js';
import { expiringLedgerTriggers } from '../../src/retention/retention.repository.js';
import { DEFAULT_RETENTION_DAYS } from '../../src/settings/retention-settings.js';
import { databaseBefore } from '../helpers/database-before.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { countRows } from './retention-helpers.js';

const MIGRATION = '0021-ledger-retention-by-trigger';

async function ledgerIndexes(db: Db, dialect: string): Promise<string[]> {
  const { rows } =
    dialect === 'sqlite'
      ? await sql<{ name: string }>`select name from sqlite_master
          where type = 'index' and tbl_name = 'trigger_deliveries' and name not like 'sqlite_autoindex%'`.execute(db)
      : await sql<{ name: string }>`select c.relname as name from pg_index x join pg_class c on c.oid = x.indexrelid
          where x.indrelid = to_regclass('trigger_deliveries')
            and not exists (select 1 from pg_constraint k where k.conindid = x.indexrelid)`.execute(db);
  return rows.map((r) => r.name).sort();
}

async function addTrigger(db: Db, id: string, state: string, at: number, devices: number): Promise<void> {
  await sql`insert into campaign_triggers (id, project_id, campaign_id, state, definition, audience, properties, targets, snapshot_at, created_at)
    values (${id}, 'p', 'c', ${state}, '{}', '{}', '{}', 0, ${at}, ${at})`.execute(db);
  for (let i = 0; i < devices; i++)
    await sql`insert into trigger_deliveries (trigger_id, device_id, batch_no, user_id, status, created_at, project_id, trigger_created_at)
      values (${id}, ${`d${i}`}, 0, 'u', 'DELIVERY_RESULT_STATUS_ACCEPTED', ${at + 1000}, 'p', ${at})`.execute(db);
}

describe.each(TEST_DIALECTS)('migration 0021 and the ledger retention by trigger on %s', (dialect) => {
  let destroy: (() => Promise<void>) | undefined;
  afterEach(async () => destroy?.());

  it('drops the ledger retention index, keeps the rows, and retention deletes each expired trigger in chunks', async () => {
    const made = await databaseBefore(dialect, MIGRATION);
    destroy = made.destroy;
    const { db } = made.handle;
    const now = Date.now();
    const old = now - 40 * DAY_MS; // past the 30-day default: on PostgreSQL in the default partition
    await sql`insert into projects (id, name, created_at) values ('p', 'p', ${old})`.execute(db);
    await sql`insert into campaigns (project_id, campaign_id, name, status, api_triggered, default_audience, message, created_at, updated_at)
      values ('p', 'c', 'c', 'active', 1, '{}', '{}', ${old}, ${old})`.execute(db);
    await addTrigger(db, 'done-1', 'completed', old, 5);
    expect(await ledgerIndexes(db, dialect)).toContain('trigger_deliveries_retention');

    await migrateToLatest(db);

    // The retention index is gone: besides the primary key, the batch index and the two partial
    // indexes by user that conversions read (migration 0043: accepted rows, and the control group's).
    expect(await ledgerIndexes(db, dialect)).toEqual([
      'trigger_deliveries_batch',
      'trigger_deliveries_control_to_user',
      'trigger_deliveries_to_user',
    ]);
    expect(await countRows(db, 'trigger_deliveries')).toBe(5);
    await addTrigger(db, 'done-2', 'canceled', old + 1, 4);
    await addTrigger(db, 'running', 'running', old + 2, 3); // an unfinished trigger keeps its ledger
    await addTrigger(db, 'recent', 'completed', now - DAY_MS, 2); // not expired

    const settings = { days: DEFAULT_RETENTION_DAYS, chunkRows: 2, intervalMs: 3_600_000, partitionsAheadDays: 3 };
    const clock = { now: () => now };
    const first = await enforceRetention(db, { settings, clock, maxChunksPerRun: 3 });
    expect(first.unfinished).toBe(true);
    // done-1: two full chunks and its last row; done-2: one full chunk, the third (the budget).
    expect(first.deleted.trigger_deliveries).toBe(7);
    const second = await enforceRetention(db, { settings, clock });
    expect(second.unfinished).toBe(false);
    expect(second.deleted.trigger_deliveries).toBe(2);
    const left = await db
      .selectFrom('trigger_deliveries')
      .select('trigger_id')
      .groupBy('trigger_id')
      .orderBy('trigger_id')
      .execute();
    expect(left.map((r) => r.trigger_id)).toEqual(['recent', 'running']);
    expect(await countRows(db, 'trigger_deliveries')).toBe(5);
    // The emptied triggers are marked, so later passes never look at them again; the others are not.
    const marked = await db.selectFrom('campaign_triggers').select(['id', 'ledger_expired_at']).orderBy('id').execute();
    expect(marked.map((r) => [r.id, r.ledger_expired_at === null ? null : Number(r.ledger_expired_at)])).toEqual([
      ['done-1', now],
      ['done-2', now],
      ['recent', null],
      ['running', null],
    ]);
    expect(await expiringLedgerTriggers(db, 'p', now - 30 * DAY_MS, 100)).toEqual([]);
    const third = await enforceRetention(db, { settings, clock });
    expect(third.deleted.trigger_deliveries ?? 0).toBe(0);

    // Once the running trigger ends, the next pass deletes its rows too.
    await db.updateTable('campaign_triggers').set({ state: 'completed' }).where('id', '=', 'running').execute();
    expect((await enforceRetention(db, { settings, clock })).deleted.trigger_deliveries).toBe(3);
    expect(await countRows(db, 'trigger_deliveries')).toBe(2);
  });
});
