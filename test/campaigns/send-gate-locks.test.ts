import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lockUsers, USER_LOCK_STRIPES } from '../../src/campaigns/policies/send-log.repository.js';
import type { Db } from '../../src/db/database.js';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';

const users = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

const advisoryLocksHeld = async (trx: Db) =>
  Number(
    (
      await sql<{ n: string }>`select count(*) as n from pg_locks
        where locktype = 'advisory' and pid = pg_backend_pid()`.execute(trx)
    ).rows[0]!.n,
  );

/** Whether `userIds` of `projectId` can be locked within 300 ms while another transaction may hold some. */
const canLock = (db: Db, projectId: string, userIds: string[]) =>
  db
    .transaction()
    .execute(async (trx) => {
      await sql`set local lock_timeout = '300ms'`.execute(trx);
      await lockUsers(trx, projectId, userIds);
      return true;
    })
    .catch((error: { code?: string }) => {
      if (error.code === '55P03') return false; // lock_not_available
      throw error;
    });

// The send gate's lock (rules `frequency-caps`, `re-eligibility`): SQLite's single writer serializes
// without it, so these run on PostgreSQL, where it is transaction-scoped advisory locks.
describe.runIf(TEST_DIALECTS.includes('postgres'))('the send gate’s user locks on PostgreSQL', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
  });
  afterAll(() => database.destroy());

  it('a batch of 5,000 users holds at most one lock per stripe', async () => {
    const held = await database.db.transaction().execute(async (trx) => {
      await lockUsers(trx, 'p1', users('u', 5000));
      return advisoryLocksHeld(trx);
    });
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThanOrEqual(USER_LOCK_STRIPES);
  });

  it('eight concurrent gates of 2,000 users each fit the server’s lock table (16,000 per-user locks did not)', async () => {
    let release!: () => void;
    const allHeld = new Promise<void>((resolve) => (release = resolve));
    let holding = 0;
    const gates = Array.from({ length: 8 }, (_, g) =>
      database.db.transaction().execute(async (trx) => {
        // Different projects, so the eight never wait for each other and all hold their locks at once.
        await lockUsers(trx, `project-${g}`, users(`g${g}`, 2000));
        if (++holding === 8) release();
        await allHeld;
        return advisoryLocksHeld(trx);
      }),
    );
    const held = await Promise.all(gates);
    expect(held.every((n) => n > 0 && n <= USER_LOCK_STRIPES)).toBe(true);
  });

  it('a gate waits for another holding one of its users, and not for the same ids of another project', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const first = database.db.transaction().execute(async (trx) => {
      await lockUsers(trx, 'p1', ['alice']);
      locked();
      await released;
    });
    await isLocked;
    expect(await canLock(database.db, 'p1', ['zed', 'alice', 'bob'])).toBe(false);
    expect(await canLock(database.db, 'p2', ['alice'])).toBe(true);
    release();
    await first;
    expect(await canLock(database.db, 'p1', ['zed', 'alice', 'bob'])).toBe(true);
  });
});
