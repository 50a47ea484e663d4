import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import {
  deliveriesToUserQuery,
  findDelivery,
  insertDeliveries,
  type DeliveriesTable,
} from '../../src/push/deliveries.repository.js';
import { newMessageId } from '../../src/push/message-id.js';
import { DeliveryStatus } from '../../src/push/push.types.js';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';

describe.each(TEST_DIALECTS)('delivery records on %s', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    await database.db.insertInto('projects').values({ id: 'p1', name: 'p', created_at: 1 }).execute();
  });
  afterAll(() => database.destroy());

  it('stores every column of every row, across statements of 100 rows and a shorter last one', async () => {
    const rows: DeliveriesTable[] = Array.from({ length: 250 }, (_, i) => ({
      message_id: newMessageId(1_700_000_000_000 + i),
      project_id: 'p1',
      target_type: i % 2 === 0 ? 'user' : 'device',
      target_id: `target-${i}`,
      device_id: i % 5 === 0 ? null : `device-${i}`,
      provider: i % 5 === 0 ? null : 'fcm',
      status: i % 3 === 0 ? DeliveryStatus.FAILED : DeliveryStatus.ACCEPTED,
      failure_reason: i % 3 === 0 ? `REASON_${i}` : null,
      provider_message_id: i % 3 === 0 ? null : `projects/x/messages/${i}`,
      trigger_id: i % 7 === 0 ? `trigger-${i}` : null,
      attempts: i % 4,
      created_at: 1_700_000_000_000 + i,
      completed_at: 1_700_000_000_500 + i,
    }));
    await insertDeliveries(database.db, rows);
    await insertDeliveries(database.db, []);
    for (const row of [rows[0]!, rows[99]!, rows[100]!, rows[201]!, rows[249]!]) {
      const stored = await findDelivery(database.db, 'p1', row.message_id);
      expect({
        ...stored,
        attempts: Number(stored!.attempts),
        created_at: Number(stored!.created_at),
        completed_at: Number(stored!.completed_at),
      }).toEqual(row);
    }
    const count = await database.db
      .selectFrom('deliveries')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(250);
  });

  const rowsOf = (count: number, at: number): DeliveriesTable[] =>
    Array.from({ length: count }, (_, i) => ({
      message_id: newMessageId(at + i),
      project_id: 'p1',
      target_type: 'device',
      target_id: `device-${i}`,
      device_id: `device-${i}`,
      provider: 'fcm',
      status: DeliveryStatus.ACCEPTED,
      failure_reason: null,
      provider_message_id: `projects/x/messages/${i}`,
      trigger_id: null,
      attempts: 1,
      created_at: at + i,
      completed_at: at + i,
    }));
  const stored = async (ids: string[]) =>
    (await database.db.selectFrom('deliveries').select('message_id').where('message_id', 'in', ids).execute()).length;

  // One commit for a whole send's records: a failing statement leaves none of them, not the first 64 or 128.
  it('stores the statements of one call in one transaction, all or nothing', async () => {
    const rows = rowsOf(200, 1_800_000_000_000);
    rows[199] = { ...rows[199]!, project_id: 'no-such-project' };
    await expect(insertDeliveries(database.db, rows)).rejects.toThrow();
    expect(await stored(rows.map((r) => r.message_id))).toBe(0);
  });

  it("joins the caller's transaction (a campaign's commit), so its rollback takes the records with it", async () => {
    const rows = rowsOf(150, 1_900_000_000_000);
    await expect(
      database.db.transaction().execute(async (trx) => {
        await insertDeliveries(trx, rows);
        expect(
          await trx
            .selectFrom('deliveries')
            .select('message_id')
            .where('message_id', '=', rows[149]!.message_id)
            .execute(),
        ).toHaveLength(1);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await stored(rows.map((r) => r.message_id))).toBe(0);
    await insertDeliveries(database.db, rows);
    expect(await stored(rows.map((r) => r.message_id))).toBe(150);
  });
});

describe.each(TEST_DIALECTS)('delivery record indexes on %s', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterAll(() => database.destroy());

  // Every index is paid for by every send, so each one a query reads and no other: the message id
  // key, retention's `(project_id, created_at)` and a user's messages (`deliveries_to_user`, partial). No query
  // reads deliveries by trigger (the ledger does).
  it('keeps only the message id key, the retention and the per-user index, not the unread (trigger_id, status) index', async () => {
    const names =
      dialect === 'sqlite'
        ? (
            await sql<{
              name: string;
            }>`select name from sqlite_master where type = 'index' and tbl_name = 'deliveries'`.execute(database.db)
          ).rows.map((r) => r.name)
        : (
            await sql<{ name: string }>`select indexname as name from pg_indexes
              where tablename = 'deliveries' and schemaname = current_schema()`.execute(database.db)
          ).rows.map((r) => r.name);
    expect(names).not.toContain('deliveries_trigger');
    expect(names.filter((n) => !/autoindex|_pkey$|_pk$/.test(n)).sort()).toEqual([
      'deliveries_retention',
      'deliveries_to_user',
    ]);
  });

  it("reads a user's messages through the partial index, newest first, without sorting", async () => {
    const query = deliveriesToUserQuery(database.db, 'prj_x', 'ada', 21, '01a2-cursor').compile();
    const plan =
      dialect === 'sqlite'
        ? (
            await database.db.executeQuery<{ detail: string }>({
              ...query,
              sql: `explain query plan ${query.sql}`,
            })
          ).rows
            .map((r) => r.detail)
            .join('\n')
        : await database.db.transaction().execute(async (trx) => {
            // An empty table: without this the planner rightly prefers reading it whole.
            await sql`set local enable_seqscan = off`.execute(trx);
            const rows = (await trx.executeQuery<{ 'QUERY PLAN': string }>({ ...query, sql: `explain ${query.sql}` }))
              .rows;
            return rows.map((r) => r['QUERY PLAN']).join('\n');
          });
    expect(plan).toMatch(dialect === 'sqlite' ? /deliveries_to_user/ : /target_id_message_id_idx|deliveries_to_user/);
    // No sort step (PostgreSQL merges the partitions' ordered scans: `Merge Append`), no full read.
    expect(plan).not.toMatch(/TEMP B-TREE|Sort {2}\(cost|Seq Scan/);
  });
});
