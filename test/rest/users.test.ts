import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';

const MISSING = 'Project User Id must be provided';

describe.each(TEST_DIALECTS)('users on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  const create = (body: unknown, headers = ctx().secret) =>
    ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });

  it('creates a user and returns its properties', async () => {
    const res = await create({ project_user_id: 'u1', properties: { plan: 'pro', age: 30, vip: true, note: null } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ properties: { plan: 'pro', age: 30, vip: true, note: null } });
    expect(res.headers['x-request-id']).toBeTruthy();
  });

  it('merges properties when the user exists and returns all of them', async () => {
    await create({ project_user_id: 'merge', properties: { a: 1, b: 'x' } });
    const res = await create({ project_user_id: 'merge', properties: { b: null, c: false } });
    expect(res.json()).toEqual({ properties: { a: 1, b: null, c: false } });
  });

  it('patch returns only the supplied keys and keeps the others', async () => {
    await create({ project_user_id: 'p1', properties: { a: 1, b: 2 } });
    const res = await ctx().inject({
      method: 'PATCH',
      url: '/api/v1/users/p1',
      headers: ctx().secret,
      payload: { properties: { b: 3, c: 'new' } },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ properties: { b: 3, c: 'new' } });
    const all = await create({ project_user_id: 'p1' });
    expect(all.json()).toEqual({ properties: { a: 1, b: 3, c: 'new' } });
  });

  it('patch of an unknown user is 404 with an empty body', async () => {
    const res = await ctx().inject({
      method: 'PATCH',
      url: '/api/v1/users/nobody',
      headers: ctx().secret,
      payload: { properties: { a: 1 } },
    });
    expect(res.statusCode).toBe(404);
    expect(res.body).toBe('');
  });

  it('answers the exact plain-text 400 for a missing id', async () => {
    const res = await create({ properties: {} });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toBe(MISSING);
  });

  it('rejects nested property values with the plain-text 400', async () => {
    const res = await create({ project_user_id: 'n', properties: { a: { b: 1 } } });
    expect(res.statusCode).toBe(400);
    expect(res.body).toBe(MISSING);
  });

  it('answers 401 without keys', async () => {
    const res = await create({ project_user_id: 'x' }, {});
    expect(res.statusCode).toBe(401);
    expect(res.json()).toHaveProperty('error');
  });

  it('delete removes the user and is 200 {} when absent', async () => {
    await create({ project_user_id: 'd1', properties: { a: 1 } });
    const res = await ctx().inject({ method: 'DELETE', url: '/api/v1/users/d1', headers: ctx().secret });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({});
    const again = await ctx().inject({ method: 'DELETE', url: '/api/v1/users/d1', headers: ctx().secret });
    expect(again.json()).toEqual({});
    const recreated = await create({ project_user_id: 'd1' });
    expect(recreated.json()).toEqual({ properties: {} });
  });

  const patch = (id: string, body: unknown) =>
    ctx().inject({
      method: 'PATCH',
      url: `/api/v1/users/${encodeURIComponent(id)}`,
      headers: { ...ctx().secret, 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });
  const internalId = async (projectUserId: string) =>
    (
      await ctx()
        .database.db.selectFrom('users')
        .select('id')
        .where('project_id', '=', ctx().project.project_id)
        .where('project_user_id', '=', projectUserId)
        .executeTakeFirst()
    )?.id;

  it('keeps null as a value, on create and on PATCH (rule `user-properties`)', async () => {
    await create({ project_user_id: 'nulls', properties: { a: 1, b: 2 } });
    const res = await patch('nulls', { properties: { a: null } });
    expect(res.json()).toEqual({ properties: { a: null } });
    expect((await create({ project_user_id: 'nulls' })).json()).toEqual({ properties: { a: null, b: 2 } });
  });

  it('PATCH without properties changes nothing and returns an empty object', async () => {
    await create({ project_user_id: 'empty-patch', properties: { a: 1 } });
    const res = await patch('empty-patch', {});
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ properties: {} });
    const noBody = await ctx().inject({ method: 'PATCH', url: '/api/v1/users/empty-patch', headers: ctx().secret });
    expect(noBody.statusCode).toBe(200);
    expect((await create({ project_user_id: 'empty-patch' })).json()).toEqual({ properties: { a: 1 } });
  });

  it('PATCH 404 has an empty body also without properties', async () => {
    const res = await patch('ghost', {});
    expect(res.statusCode).toBe(404);
    expect(res.body).toBe('');
    expect(res.headers['x-request-id']).toBeTruthy();
    expect(await internalId('ghost')).toBeUndefined();
  });

  it('keeps numbers, booleans, unicode and odd keys exactly, also through a merge', async () => {
    const properties = {
      big: 9007199254740991,
      neg: -0.000123,
      huge: 1.7976931348623157e308,
      t: true,
      f: false,
      s: 'naïve 😀 中文\n\t"quoted" \\ back',
      empty: '',
      '$.path': 1,
      'a.b[0]': 2,
      '"key"': 3,
      '🔑': 4,
      ' ': 5,
    };
    await create({ project_user_id: 'types', properties });
    expect((await create({ project_user_id: 'types' })).json()).toEqual({ properties });
    await patch('types', { properties: { '$.path': 'patched' } });
    expect((await create({ project_user_id: 'types', properties: { extra: null } })).json()).toEqual({
      properties: { ...properties, '$.path': 'patched', extra: null },
    });
  });

  it('60 concurrent creates and patches of one user lose no key (rule `create-merges`)', async () => {
    await create({ project_user_id: 'race', properties: { seed: true } });
    const writes = Array.from({ length: 60 }, (_, i) =>
      i % 2 === 0
        ? create({ project_user_id: 'race', properties: { [`k${i}`]: i } })
        : patch('race', { properties: { [`k${i}`]: i } }),
    );
    const results = await Promise.all(writes);
    expect(results.map((r) => r.statusCode)).toEqual(Array(60).fill(200));
    const all = (await create({ project_user_id: 'race' })).json<{ properties: Record<string, unknown> }>().properties;
    expect(Object.keys(all)).toHaveLength(61);
    for (let i = 0; i < 60; i++) expect(all[`k${i}`]).toBe(i);
    // On PostgreSQL the writes really overlapped: the pool opened more than one connection.
    if (ctx().database.pgPool) expect(ctx().database.pgPool!.totalCount).toBeGreaterThan(1);
  });

  it('60 concurrent first creates of a new user make one user with every key', async () => {
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => create({ project_user_id: 'race-new', properties: { [`n${i}`]: i } })),
    );
    expect(results.every((r) => r.statusCode === 200)).toBe(true);
    const rows = await ctx()
      .database.db.selectFrom('users')
      .select('id')
      .where('project_user_id', '=', 'race-new')
      .execute();
    expect(rows).toHaveLength(1);
    expect(
      Object.keys((await create({ project_user_id: 'race-new' })).json<{ properties: object }>().properties),
    ).toHaveLength(60);
  });

  it('delete is permanent: devices and events go, the id is reusable with a new internal id (rule `internal-user-id`)', async () => {
    await create({ project_user_id: 'gone', properties: { plan: 'pro' } });
    const before = await internalId('gone');
    for (const token of ['del-tok-1', 'del-tok-2']) {
      const res = await ctx().inject({
        method: 'POST',
        url: '/api/v1/devices',
        headers: ctx().secret,
        payload: { project_user_id: 'gone', platform: 'android', fcm_token: token },
      });
      expect(res.statusCode).toBe(200);
    }
    const events = await ctx().inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: ctx().secret,
      payload: { events: [1, 2, 3].map((n) => ({ project_user_id: 'gone', name: `e${n}` })) },
    });
    expect(events.statusCode).toBe(200);
    const count = async (table: 'devices' | 'events') =>
      Number(
        (
          await sql<{ n: number }>`select count(*) as n from ${sql.table(table)} where user_id = ${before}`.execute(
            ctx().database.db,
          )
        ).rows[0]!.n,
      );
    expect(await count('devices')).toBe(2);
    expect(await count('events')).toBe(3);

    expect((await ctx().inject({ method: 'DELETE', url: '/api/v1/users/gone', headers: ctx().secret })).json()).toEqual(
      {},
    );
    expect(await count('devices')).toBe(0);
    expect(await count('events')).toBe(0);
    expect(await internalId('gone')).toBeUndefined();
    expect(
      (await ctx().inject({ method: 'GET', url: '/api/v1/users/gone/devices', headers: ctx().secret })).statusCode,
    ).toBe(404);
    expect(
      (await ctx().inject({ method: 'GET', url: '/api/v1/users/gone/events', headers: ctx().secret })).statusCode,
    ).toBe(404);
    expect((await patch('gone', { properties: { a: 1 } })).statusCode).toBe(404);

    const again = await create({ project_user_id: 'gone', properties: { fresh: 1 } });
    expect(again.json()).toEqual({ properties: { fresh: 1 } });
    const after = await internalId('gone');
    expect(after).toBeTruthy();
    expect(after).not.toBe(before);
    expect(
      (await ctx().inject({ method: 'GET', url: '/api/v1/users/gone/devices', headers: ctx().secret })).json(),
    ).toEqual({ devices: [] });
  });
});
