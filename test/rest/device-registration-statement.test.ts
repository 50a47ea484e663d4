import { DefaultQueryCompiler } from 'kysely';
import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { insertNewDevicesOfEnsuredUsers } from '../../src/devices/new-devices.repository.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { genericPlan } from '../helpers/statements.js';

/*
 * A registration without a device_id writes its user and device in one statement on PostgreSQL
 * (src/devices/new-device-writes.ts); these are the outcomes it must share with the
 * transaction it replaces, on both databases, and the statements it sends on PostgreSQL.
 */

const register = (ctx: TestContext, body: object) =>
  ctx.inject({ method: 'POST', url: '/api/v1/devices', headers: ctx.public, payload: body });

const userId = async (ctx: TestContext, projectUserId: string) =>
  (
    await ctx.database.db
      .selectFrom('users')
      .select('id')
      .where('project_id', '=', ctx.project.project_id)
      .where('project_user_id', '=', projectUserId)
      .executeTakeFirstOrThrow()
  ).id;

const devicesOf = async (ctx: TestContext, projectUserId: string) =>
  (await ctx.inject({ method: 'GET', url: `/api/v1/users/${projectUserId}/devices`, headers: ctx.secret })).json<{
    devices: { device_id: string; push_address?: string }[];
  }>().devices;

describe.each(TEST_DIALECTS)('registering a new device id on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  it('creates the user once, then adds devices to it', async () => {
    const first = await register(ctx(), { project_user_id: 'reg-1', platform: 'android', fcm_token: 'reg-1-a' });
    const second = await register(ctx(), { project_user_id: 'reg-1', platform: 'android', fcm_token: 'reg-1-b' });
    expect(first.statusCode, first.body).toBe(200);
    expect(second.statusCode, second.body).toBe(200);
    expect(first.json().device_id).not.toBe(second.json().device_id);
    expect(await userId(ctx(), 'reg-1')).toMatch(/^[0-9a-f-]{36}$/);
    expect((await devicesOf(ctx(), 'reg-1')).map((d) => d.device_id).sort()).toEqual(
      [first.json().device_id, second.json().device_id].sort(),
    );
  });

  it('a push address registered again moves to the new user and new device id', async () => {
    await register(ctx(), { project_user_id: 'reg-old', platform: 'android', fcm_token: 'reg-moving' });
    const moved = await register(ctx(), { project_user_id: 'reg-new', platform: 'android', fcm_token: 'reg-moving' });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(await devicesOf(ctx(), 'reg-old')).toEqual([]);
    expect((await devicesOf(ctx(), 'reg-new')).map((d) => d.device_id)).toEqual([moved.json().device_id]);
  });

  it('concurrent first registrations of one user all land on that one user', async () => {
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        register(ctx(), { project_user_id: 'reg-race', platform: 'android', fcm_token: `reg-race-${i}` }),
      ),
    );
    for (const res of results) expect(res.statusCode, res.body).toBe(200);
    expect(await devicesOf(ctx(), 'reg-race')).toHaveLength(12);
  });

  it('a web push subscription on a platform other than web is refused with nothing written', async () => {
    const res = await register(ctx(), {
      project_user_id: 'reg-bad',
      platform: 'android',
      web_push_subscription: { endpoint: 'https://push.example.com/send/1', keys: { p256dh: 'x', auth: 'y' } },
    });
    expect(res.statusCode, res.body).toBe(400);
    const users = await ctx()
      .database.db.selectFrom('users')
      .select('id')
      .where('project_id', '=', ctx().project.project_id)
      .where('project_user_id', '=', 'reg-bad')
      .execute();
    expect(users).toEqual([]);
  });
});

describe.runIf(TEST_DIALECTS.includes('postgres'))('device registration statements on postgres', () => {
  const ctx = useTestContext('postgres');

  it('a new device id is one statement, for a new user and for an existing one', async () => {
    for (const token of ['stmt-a', 'stmt-b']) {
      const spy = vi.spyOn(pg.Client.prototype, 'query');
      try {
        const res = await register(ctx(), { project_user_id: 'stmt-user', platform: 'android', fcm_token: token });
        expect(res.statusCode, res.body).toBe(200);
        const written = spy.mock.calls
          .map(([query]) => String(typeof query === 'string' ? query : (query as { text: string }).text).trim())
          .filter((text) => /^(begin|commit|with|insert|update|delete)\b/i.test(text));
        expect(written).toHaveLength(1);
        expect(written[0]).toMatch(/^with "inserted_user" as \(insert into "users" .* insert into "devices"/s);
      } finally {
        spy.mockRestore();
      }
    }
    expect(await devicesOf(ctx(), 'stmt-user')).toHaveLength(2);
  });

  it('a public-key registration reads the identity setting with its key, not in a statement of its own', async () => {
    const spy = vi.spyOn(pg.Client.prototype, 'query');
    try {
      const res = await register(ctx(), { project_user_id: 'iv-user', platform: 'android', fcm_token: 'iv-token' });
      expect(res.statusCode, res.body).toBe(200);
      const texts = spy.mock.calls.map(([query]) =>
        String(typeof query === 'string' ? query : (query as { text: string }).text),
      );
      const keyReads = texts.filter((text) => text.includes('from "api_keys"'));
      expect(keyReads).toHaveLength(1);
      expect(keyReads[0]).toMatch(/left join "identity_verification"/);
      expect(texts.filter((text) => /from "identity_verification"/.test(text))).toEqual([]);
    } finally {
      spy.mockRestore();
    }
  });

  it('that statement is compiled once, not per request (src/db/prepared.ts)', async () => {
    const first = await register(ctx(), { project_user_id: 'stmt-once', platform: 'android', fcm_token: 'once-a' });
    expect(first.statusCode, first.body).toBe(200);
    const spy = vi.spyOn(DefaultQueryCompiler.prototype, 'compileQuery');
    try {
      for (const [user, token] of [
        ['stmt-once', 'once-b'],
        ['stmt-twice', 'once-c'],
      ]) {
        const res = await register(ctx(), { project_user_id: user, platform: 'android', fcm_token: token });
        expect(res.statusCode, res.body).toBe(200);
      }
      // A statement built here, so the spy is shown to see compilations.
      await ctx().database.db.selectFrom('projects').select('id').execute();
      const compiled = spy.mock.results.map((r) => (r.value as { sql: string }).sql);
      expect(compiled.filter((text) => text.includes('from "projects"'))).toHaveLength(1);
      expect(compiled.filter((text) => text.includes('"inserted_user"'))).toEqual([]);
    } finally {
      spy.mockRestore();
    }
    const stored = await ctx()
      .database.db.selectFrom('devices')
      .innerJoin('users', 'users.id', 'devices.user_id')
      .select(['users.project_user_id', 'devices.push_address', 'devices.created_at'])
      .where('devices.project_id', '=', ctx().project.project_id)
      .where('devices.push_address', 'in', ['once-b', 'once-c'])
      .orderBy('devices.push_address')
      .execute();
    expect(stored.map((d) => [d.project_user_id, d.push_address])).toEqual([
      ['stmt-once', 'once-b'],
      ['stmt-twice', 'once-c'],
    ]);
  });
});

describe.runIf(TEST_DIALECTS.includes('postgres'))('the shared registration statement on PostgreSQL', () => {
  const ctx = useTestContext('postgres');

  it('finds existing users by their key in any plan, also one PostgreSQL keeps from when `users` was nearly empty', async () => {
    const projectId = ctx().project.project_id;
    const now = Date.now();
    const row = (n: number) => ({
      id: `00000000-0000-7000-8000-00000000000${n}`,
      projectId,
      projectUserId: `plan-user-${n}`,
      now,
      project_id: projectId,
      device_id: `plan-device-${n}`,
      platform: 'android' as const,
      provider: 'fcm' as const,
      push_address: `plan-token-${n}`,
      push_keys: null,
      created_at: now,
      updated_at: now,
    });
    const spy = vi.spyOn(pg.Client.prototype, 'query');
    let text: string;
    try {
      expect(await insertNewDevicesOfEnsuredUsers(ctx().database.db, [row(1), row(2)])).toHaveLength(2);
      const texts = spy.mock.calls.map(([query]) =>
        String(typeof query === 'string' ? query : (query as { text: string }).text),
      );
      text = texts.find((t) => t.includes('inserted_user as ('))!;
      expect(text).toBeDefined();
    } finally {
      spy.mockRestore();
    }
    // The plan a named statement may keep: generic, made from the table's statistics alone (this test
    // database's `users` holds a few rows and was never analyzed, as a new installation's is).
    const args = Array.from({ length: 11 }, (_, i) => ([3, 9, 10].includes(i) ? "'{1}'" : "'{x}'"));
    const plan = await genericPlan(ctx().database.db, text, args);
    expect(plan).toMatch(/Index Scan using users_project_user_unique on users/);
    expect(plan).not.toMatch(/Seq Scan on users/);
  });
});
