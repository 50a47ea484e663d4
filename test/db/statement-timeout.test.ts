import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/connect.js';
import { createCampaign, createUser } from '../campaigns/campaign-helpers.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

/*
 * Rule `query-timeout`: DATABASE_READ_TIMEOUT_MS and DATABASE_DRY_RUN_TIMEOUT_MS (PostgreSQL). A statement stopped by
 * them answers 422 QUERY_TIMEOUT naming the setting: the database is healthy, the read was too
 * costly. A lock held on `users` stands in for an expensive read (statement_timeout counts the wait).
 */
describe.runIf(TEST_DIALECTS.includes('postgres'))('statement timeouts of API reads on postgres', () => {
  let timed: DatabaseHandle | undefined;
  const ctx = useTestContext('postgres', {
    overrides: (database) => {
      timed = openDatabase({ ...database.target, poolSize: 4, readTimeoutMs: 300, dryRunTimeoutMs: 700 });
      return { database: timed };
    },
  });
  afterAll(() => timed?.close());

  /** Runs `work` while another transaction holds `users` exclusively. */
  async function whileUsersLocked<T>(work: () => Promise<T>): Promise<T> {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = ctx()
      .database.db.transaction()
      .execute(async (trx) => {
        await sql`lock table users in access exclusive mode`.execute(trx);
        locked();
        await released;
      });
    await isLocked;
    try {
      return await work();
    } finally {
      release();
      await holder;
    }
  }

  it('lists answer as usual under the timeout, and 422 QUERY_TIMEOUT when a read runs past it', async () => {
    await createUser(ctx(), 'u1');
    const list = () => ctx().inject({ method: 'GET', url: '/api/v1/users', headers: ctx().secret });
    expect((await list()).statusCode).toBe(200);
    const slow = await whileUsersLocked(list);
    expect(slow.statusCode).toBe(422);
    expect(slow.headers['x-error-reason']).toBe('QUERY_TIMEOUT');
    expect(slow.json<{ error: string }>().error).toMatch(/300 ms \(DATABASE_READ_TIMEOUT_MS\)/);
    expect(slow.headers['retry-after']).toBeUndefined();
    expect((await list()).statusCode).toBe(200);
  });

  it('a dry run has its own, longer timeout; no timeout stays on the pool connections', async () => {
    const campaignId = await createCampaign(ctx());
    const dryRun = () =>
      ctx().inject({
        method: 'POST',
        url: `/api/v1/campaigns/${campaignId}:trigger?dry_run=true`,
        headers: ctx().secret,
        payload: {},
      });
    expect((await dryRun()).statusCode).toBe(200);
    const slow = await whileUsersLocked(dryRun);
    expect(slow.statusCode).toBe(422);
    expect(slow.json<{ error: string }>().error).toMatch(/700 ms \(DATABASE_DRY_RUN_TIMEOUT_MS\)/);
    // SET LOCAL lives in its transaction only: the pool's connections carry no timeout afterwards.
    const settings = await Promise.all(
      Array.from({ length: 4 }, () => sql<{ statement_timeout: string }>`show statement_timeout`.execute(timed!.db)),
    );
    expect(settings.map((s) => s.rows[0]!.statement_timeout)).toEqual(['0', '0', '0', '0']);
  });
});
