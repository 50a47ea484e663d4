import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { newTimeOrderedId } from '../../src/lib/ids.js';
import { systemClock } from '../../src/lib/clock.js';
import { createProject } from '../../src/projects/projects.service.js';
import { STALLED_AFTER_MS, sharedStatementsInFlight } from '../../src/db/shared-statements.js';
import { sharedUserUpserts, type UserUpsertRow } from '../../src/users/user-upserts.js';
import { countingStatements, failingStatements, timedStatements } from '../helpers/statements.js';
import { useTestContext } from '../helpers/test-app.js';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';

/*
 * Create-user on PostgreSQL shares statements under load (src/users/user-upserts.ts): upserts that
 * arrive while the in-flight limit is reached go together, distinct users in one statement.
 */

describe('shared statements in flight', () => {
  it('are a quarter of the query pool, at least 2 and at most the pool', () => {
    expect([1, 2, 4, 10, 16, 40].map(sharedStatementsInFlight)).toEqual([1, 2, 2, 2, 4, 10]);
  });
});

describe.runIf(TEST_DIALECTS.includes('postgres'))('shared user upserts on postgres', () => {
  let database: TestDatabase;
  let projectId: string;
  const warnings: unknown[] = [];
  const log = { warn: (...args: unknown[]) => void warnings.push(args) };
  beforeEach(() => {
    warnings.length = 0;
  });
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    projectId = (await createProject(database.db, systemClock, 'upserts')).project_id;
  });
  afterAll(async () => {
    await database.destroy();
  });

  const row = (projectUserId: string, properties: Record<string, unknown>, project = projectId): UserUpsertRow => ({
    id: newTimeOrderedId(),
    projectId: project,
    projectUserId,
    propertiesJson: JSON.stringify(properties),
    now: Date.now(),
  });

  it('an upsert with nothing in flight goes alone and at once', async () => {
    const { db, statements } = countingStatements(database.db);
    const user = await sharedUserUpserts(db, 1, log).upsert(row('alone', { a: 1 }));
    expect(user).toMatchObject({ projectUserId: 'alone', properties: { a: 1 } });
    expect(statements).toEqual([1]);
  });

  it('upserts that arrive while the limit is reached share one statement, each answered with its own user', async () => {
    const { db, statements } = countingStatements(database.db);
    const upserts = sharedUserUpserts(db, 1, log);
    const users = await Promise.all(Array.from({ length: 9 }, (_, i) => upserts.upsert(row(`many-${i}`, { i }))));
    users.forEach((user, i) => expect(user).toMatchObject({ projectUserId: `many-${i}`, properties: { i } }));
    // The first alone, the eight that waited in one statement.
    expect(statements).toEqual([1, 8]);
    const stored = await database.db
      .selectFrom('users')
      .select(['id', 'project_user_id'])
      .where('project_user_id', 'like', 'many-%')
      .execute();
    expect(new Map(stored.map((r) => [r.project_user_id, r.id]))).toEqual(
      new Map(users.map((u) => [u!.projectUserId, u!.id])),
    );
  });

  it('a statement takes a power of two of distinct users; a repeated user waits for a later one and both merges land', async () => {
    const { db, statements } = countingStatements(database.db);
    const upserts = sharedUserUpserts(db, 1, log);
    const results = await Promise.all([
      upserts.upsert(row('first', {})),
      upserts.upsert(row('twice', { one: 1 })),
      upserts.upsert(row('other', { x: true })),
      upserts.upsert(row('twice', { two: 2 })),
      upserts.upsert(row('third', {})),
    ]);
    // 'first' alone; of the distinct 'twice', 'other' and 'third' the first two go together (a power
    // of two); then the repeat of 'twice', which had to wait for its first, with 'third'.
    expect(statements).toEqual([1, 2, 2]);
    expect(results[1]!.properties).toEqual({ one: 1 });
    expect(results[3]!.properties).toEqual({ one: 1, two: 2 });
    expect(results[3]!.id).toBe(results[1]!.id);
  });

  it("one statement can hold two projects' users of the same id; each answer is its own project's user", async () => {
    const other = (await createProject(database.db, systemClock, 'upserts-other')).project_id;
    const { db, statements } = countingStatements(database.db);
    const upserts = sharedUserUpserts(db, 1, log);
    const [, mine, theirs] = await Promise.all([
      upserts.upsert(row('lead-3', {})),
      upserts.upsert(row('same-id', { mine: true })),
      upserts.upsert(row('same-id', { theirs: true }, other)),
    ]);
    expect(statements).toEqual([1, 2]);
    expect(mine!.properties).toEqual({ mine: true });
    expect(theirs!.properties).toEqual({ theirs: true });
    expect(mine!.id).not.toBe(theirs!.id);
  });

  it('a merge past the key limit fails only its own upsert and writes nothing for it', async () => {
    const full = Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`k${i}`, i]));
    await sharedUserUpserts(database.db, 1, log).upsert(row('full', full));
    const upserts = sharedUserUpserts(database.db, 1, log);
    const [, tooMany, fine] = await Promise.all([
      upserts.upsert(row('lead', {})),
      upserts.upsert(row('full', { extra: 1 })),
      upserts.upsert(row('fits', { ok: true })),
    ]);
    expect(tooMany).toBeUndefined();
    expect(fine).toMatchObject({ projectUserId: 'fits', properties: { ok: true } });
    const stored = await database.db
      .selectFrom('users')
      .select('properties')
      .where('project_user_id', '=', 'full')
      .executeTakeFirstOrThrow();
    expect(Object.keys(stored.properties as object)).toHaveLength(256);
  });

  it('when a shared statement fails, each of its upserts runs alone and gets its own outcome', async () => {
    const { db, statements } = countingStatements(database.db);
    const upserts = sharedUserUpserts(db, 1, log);
    const [, good, orphan] = await Promise.allSettled([
      upserts.upsert(row('lead-2', {})),
      upserts.upsert(row('good', { g: 1 })),
      // No such project: the foreign key fails the shared statement, then this upsert alone.
      upserts.upsert(row('orphan', {}, 'no-such-project')),
    ]);
    expect(good).toMatchObject({ status: 'fulfilled', value: { projectUserId: 'good', properties: { g: 1 } } });
    expect(orphan.status).toBe('rejected');
    expect(String((orphan as PromiseRejectedResult).reason)).toMatch(/foreign key/);
    // The lead alone and `good` alone: the failed shared statement returned no result to count.
    expect(statements).toEqual([1, 1]);
    // A foreign key is a failure an upsert may meet alone: nothing to log.
    expect(warnings).toEqual([]);
  });

  it('an upsert held on a locked row lets the next start beside it after the stall time, not before', async () => {
    const { db: timed, sent } = timedStatements(database.db);
    const upserts = sharedUserUpserts(timed, 2, log);
    await upserts.upsert(row('locked', {}));
    const settled: string[] = [];
    await database.db.transaction().execute(async (trx) => {
      await sql`select 1 from users where project_user_id = 'locked' for update`.execute(trx);
      sent.length = 0;
      void upserts.upsert(row('locked', { late: true })).then(() => settled.push('locked'));
      // Not behind the lock: it goes beside the held statement once that has stalled.
      const free = await Promise.race([
        upserts.upsert(row('free', { ok: true })),
        new Promise((resolve) => setTimeout(resolve, 5000, 'timed out')),
      ]);
      expect(free).toMatchObject({ projectUserId: 'free', properties: { ok: true } });
      expect(sent).toHaveLength(2);
      expect(sent[1]! - sent[0]!).toBeGreaterThanOrEqual(STALLED_AFTER_MS - 1);
      expect(settled).toEqual([]);
    });
    await expect.poll(() => settled).toEqual(['locked']);
  });

  it('a shared statement failing for an unexpected reason is logged, and each upsert runs alone', async () => {
    // The multi-row statement fails as a driver bug would, before it reaches the database.
    const broken = failingStatements(database.db, (sql) => /\), \(/.test(sql));
    const upserts = sharedUserUpserts(broken, 1, log);
    const users = await Promise.all(['lead-4', 'u-a', 'u-b'].map((id) => upserts.upsert(row(id, { id }))));
    expect(users.map((u) => u!.properties)).toEqual([{ id: 'lead-4' }, { id: 'u-a' }, { id: 'u-b' }]);
    expect(warnings).toHaveLength(1);
    expect(String((warnings[0] as [{ err: unknown }])[0].err)).toMatch(/broken shared statement/);
  });
});

describe.each(TEST_DIALECTS)('concurrent creates over HTTP on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  it('200 creates at once, some of one user, each answered with its own user; every key lands', async () => {
    const create = (projectUserId: string, properties: Record<string, unknown>) =>
      ctx().inject({
        method: 'POST',
        url: '/api/v1/users',
        headers: { ...ctx().secret, 'content-type': 'application/json' },
        payload: JSON.stringify({ project_user_id: projectUserId, properties }),
      });
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        i % 10 === 0 ? create('shared', { [`s${i}`]: i }) : create(`c-${i}`, { i }),
      ),
    );
    expect(results.map((r) => r.statusCode)).toEqual(Array(200).fill(200));
    results.forEach((res, i) => {
      const properties = res.json<{ properties: Record<string, unknown> }>().properties;
      if (i % 10 === 0) expect(properties[`s${i}`]).toBe(i);
      else expect(properties).toEqual({ i });
    });
    const shared = (await create('shared', {})).json<{ properties: object }>().properties;
    expect(Object.keys(shared)).toHaveLength(20);
  });
});
