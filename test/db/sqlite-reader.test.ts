import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/connect.js';
import { createCampaign, createUser, trigger } from '../campaigns/campaign-helpers.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

const USERS = 150_000;

/** `USERS` users with one device each in the context's project, inserted raw (the API would take minutes). */
function seedUsers(ctx: TestContext): void {
  const raw = ctx.database.sqlite!.connection;
  const projectId = ctx.project.project_id;
  const user = raw.prepare(
    'insert into users (id, project_id, project_user_id, properties, created_at, updated_at) values (?, ?, ?, \'{"plan":"pro"}\', 1, 1)',
  );
  const device = raw.prepare(
    "insert into devices (project_id, device_id, user_id, platform, provider, push_address, status, created_at, updated_at) values (?, ?, ?, 'android', 'fcm', ?, 'active', 1, 1)",
  );
  raw.transaction(() => {
    for (let i = 0; i < USERS; i++) {
      const id = `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`;
      user.run(id, projectId, `seeded-${i}`);
      device.run(projectId, `device-${i}`, id, `token-${i}`);
    }
  })();
}

const dryRun = (ctx: TestContext, campaignId: string, headers = ctx.secret) =>
  trigger(ctx, campaignId, { audience: { broadcast: true } }, { dryRun: true, headers });

/**
 * On the embedded database a dry run's count runs on a reader thread with its own connection
 * (src/db/sqlite-reader.ts): the event loop serves other requests meanwhile, and a count past
 * DATABASE_DRY_RUN_TIMEOUT_MS answers 422 QUERY_TIMEOUT (rule `query-timeout`), as on PostgreSQL.
 */
describe.runIf(TEST_DIALECTS.includes('sqlite'))('dry runs on the embedded database', () => {
  const ctx = useTestContext('sqlite');

  it('counts off the event loop: other requests are answered while a large count runs', async () => {
    seedUsers(ctx());
    const campaignId = await createCampaign(ctx(), { segment: { property: 'plan', op: 'eq', value: 'pro' } });
    const answered: string[] = [];
    const count = dryRun(ctx(), campaignId).then((res) => {
      answered.push('dry run');
      return res;
    });
    // Requests that arrive while the count runs; on the event loop they would all wait for it.
    const others = (async () => {
      for (let i = 0; i < 5; i++) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        const res = await ctx().inject({ method: 'GET', url: '/api/v1/users/seeded-1', headers: ctx().secret });
        expect(res.statusCode).toBe(200);
        answered.push('read');
      }
    })();
    const [res] = await Promise.all([count, others]);
    expect(res.statusCode).toBe(200);
    expect(res.json<{ counters: { in_segment: number } }>().counters.in_segment).toBe(USERS);
    expect(answered.indexOf('read')).toBeGreaterThanOrEqual(0);
    expect(answered.indexOf('read')).toBeLessThan(answered.indexOf('dry run'));
  });
});

describe.runIf(TEST_DIALECTS.includes('sqlite'))('dry runs on the embedded database, under a timeout', () => {
  let timed: DatabaseHandle | undefined;
  const ctx = useTestContext('sqlite', {
    overrides: (database) => {
      timed = openDatabase({ ...database.target, dryRunTimeoutMs: 60 });
      return { database: timed };
    },
  });
  afterAll(() => timed?.close());

  it('a count past DATABASE_DRY_RUN_TIMEOUT_MS answers 422 QUERY_TIMEOUT; the next dry run answers', async () => {
    seedUsers(ctx());
    const campaignId = await createCampaign(ctx(), { segment: { property: 'plan', op: 'eq', value: 'pro' } });
    const slow = await dryRun(ctx(), campaignId);
    expect(slow.statusCode).toBe(422);
    expect(slow.headers['x-error-reason']).toBe('QUERY_TIMEOUT');
    expect(slow.json<{ error: string }>().error).toMatch(/60 ms \(DATABASE_DRY_RUN_TIMEOUT_MS\)/);
    // A small project's count fits the timeout (after the stopped thread has finished its statement).
    const other = await ctx().newProject('small');
    await createUser(ctx(), 'only', { plan: 'pro' }, other.secret);
    const small = await createCampaign(ctx(), { segment: { property: 'plan', op: 'eq', value: 'pro' } }, other.secret);
    const res = await dryRun(ctx(), small, other.secret);
    expect(res.statusCode).toBe(200);
    expect(res.json<{ counters: { in_segment: number } }>().counters.in_segment).toBe(1);
  });
});
