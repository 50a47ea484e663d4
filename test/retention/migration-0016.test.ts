import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { recordDeliveries } from '../../src/campaigns/trigger-deliveries.repository.js';
import type { DatabaseHandle } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { dayStart, partitionName } from '../../src/db/partitions.js';
import { DAY_MS } from '../../src/lib/clock.js';
import { databaseBefore } from '../helpers/database-before.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { countRows } from './retention-helpers.js';

const MIGRATION = '0016-retention-partitions';

/** Index name -> its columns, for the indexes that are not constraints. */
async function indexColumns(handle: DatabaseHandle, table: string): Promise<Record<string, string>> {
  const { rows } = await sql<{ name: string; definition: string }>`
    select i.relname as name, pg_get_indexdef(x.indexrelid) as definition
    from pg_index x join pg_class i on i.oid = x.indexrelid
    where x.indrelid = to_regclass(${table})
      and not exists (select 1 from pg_constraint c where c.conindid = x.indexrelid)`.execute(handle.db);
  return Object.fromEntries(rows.map((r) => [r.name, /\(([^)]*)\)/.exec(r.definition)![1]!]));
}

describe.each(TEST_DIALECTS)('migration 0016 on %s', (dialect) => {
  let destroy: (() => Promise<void>) | undefined;
  afterEach(async () => destroy?.());

  it('converts tables holding rows in the old shape, keeping rows, indexes and uniqueness', async () => {
    const made = await databaseBefore(dialect, MIGRATION);
    destroy = made.destroy;
    const { db } = made.handle;
    const now = Date.now();
    const old = now - 10 * DAY_MS; // a day with a partition of its own after conversion
    const ancient = now - 1000 * DAY_MS; // older than the history kept in day partitions: the default one
    await sql`insert into projects (id, name, created_at) values ('p', 'p', ${old})`.execute(db);
    await sql`insert into users (id, project_id, project_user_id, properties, created_at, updated_at)
      values ('u', 'p', 'pu', '{}', ${old}, ${old})`.execute(db);
    for (const [id, at] of [
      ['e1', ancient],
      ['e2', old],
      ['e3', now],
    ] as const)
      await sql`insert into events (id, project_id, user_id, name, properties, timestamp, received_at)
        values (${id}, 'p', 'u', 'n', '{}', ${at}, ${at})`.execute(db);
    await sql`insert into deliveries (message_id, project_id, target_type, target_id, status, attempts, created_at, completed_at)
      values ('m1', 'p', 'user', 'pu', 'DELIVERY_RESULT_STATUS_ACCEPTED', 1, ${old}, ${old})`.execute(db);
    await sql`insert into campaigns (project_id, campaign_id, name, status, api_triggered, default_audience, message, created_at, updated_at)
      values ('p', 'c', 'c', 'active', 1, '{}', '{}', ${old}, ${old})`.execute(db);
    await sql`insert into campaign_triggers (id, project_id, campaign_id, state, definition, audience, properties, targets, snapshot_at, created_at)
      values ('t', 'p', 'c', 'completed', '{}', '{}', '{}', 0, ${old}, ${old})`.execute(db);
    await sql`insert into trigger_deliveries (trigger_id, device_id, batch_no, user_id, status, created_at)
      values ('t', 'd1', 0, 'u', 'DELIVERY_RESULT_STATUS_ACCEPTED', ${old + 5000})`.execute(db);
    const indexesBefore = dialect === 'postgres' ? await indexColumns(made.handle, 'trigger_deliveries') : {};

    await migrateToLatest(db);

    expect(await countRows(db, 'events')).toBe(3);
    expect(await countRows(db, 'deliveries')).toBe(1);
    const ledger = await db.selectFrom('trigger_deliveries').selectAll().execute();
    expect(ledger).toMatchObject([{ trigger_id: 't', device_id: 'd1', project_id: 'p' }]);
    expect(Number(ledger[0]!.trigger_created_at)).toBe(old); // the trigger's start, not the row's
    // (trigger, device) is still unique: recording d1 again keeps the first row; d2 is added.
    const row = { ...ledger[0]!, trigger_created_at: old, status: 'DELIVERY_RESULT_STATUS_FAILED' };
    await recordDeliveries(db, [row, { ...row, device_id: 'd2' }]);
    expect(
      (await db.selectFrom('trigger_deliveries').select(['device_id', 'status']).orderBy('device_id').execute()).map(
        (r) => `${r.device_id}:${r.status}`,
      ),
    ).toEqual(['d1:DELIVERY_RESULT_STATUS_ACCEPTED', 'd2:DELIVERY_RESULT_STATUS_FAILED']);
    // Event sequence numbers continue after the old ones.
    await sql`insert into events (id, project_id, user_id, name, properties, timestamp, received_at)
      values ('e4', 'p', 'u', 'n', '{}', ${now}, ${now})`.execute(db);
    const seqs = await db.selectFrom('events').select(['id', 'seq']).orderBy('seq').execute();
    expect(seqs.map((r) => r.id)).toEqual(['e1', 'e2', 'e3', 'e4']);
    await expect(
      sql`insert into events (id, project_id, user_id, name, properties, timestamp, received_at)
        values ('e5', 'p', 'u', 'n', '{}', ${now}, ${now}), ('e6', 'p', 'u', 'n', '{}', ${now}, ${now})`.execute(db),
    ).resolves.toBeDefined();

    if (dialect === 'postgres') {
      for (const table of ['deliveries', 'events', 'trigger_deliveries'])
        expect(await countRows(db, 'pg_partitioned_table', sql`partrelid = to_regclass(${table})`)).toBe(1);
      expect(await countRows(db, partitionName('events', old))).toBe(1);
      expect(await countRows(db, 'events_default')).toBe(1); // the ancient row
      expect(await countRows(db, partitionName('trigger_deliveries', old))).toBe(2);
      for (let d = 0; d <= 3; d++)
        expect(await countRows(db, partitionName('deliveries', dayStart(now) + d * DAY_MS))).toBe(0);
      // Every index the table had before is still there, on the same columns.
      const after = await indexColumns(made.handle, 'trigger_deliveries');
      for (const [name, columns] of Object.entries(indexesBefore)) expect(after[name]).toBe(columns);
      // 0016's own `trigger_deliveries_retention` is dropped again by 0021 (retention finds the rows by trigger).
      expect(after.trigger_deliveries_retention).toBeUndefined();
      // Primary keys hold the partition key; a duplicate message id at the same time is still refused.
      await expect(
        sql`insert into deliveries (message_id, project_id, target_type, target_id, status, attempts, created_at, completed_at)
          values ('m1', 'p', 'user', 'pu', 'x', 1, ${old}, ${old})`.execute(db),
      ).rejects.toThrow(/duplicate key/);
      // Foreign keys came along: deleting the user removes its events in every partition.
      await sql`delete from users where id = 'u'`.execute(db);
      expect(await countRows(db, 'events')).toBe(0);
    }
  });
});
