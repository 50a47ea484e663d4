import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';

const MISSING = 'Project User Id must be provided';

describe.each(TEST_DIALECTS)('users on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  const create = (body: unknown, headers = ctx().secret) =>
    ctx().inject({ method: 'POST', url: '/api/v1/users', headers: { ...headers, 'content-type': 'application/json' }, payload: JSON.stringify(body) });

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
    const res = await ctx().inject({ method: 'PATCH', url: '/api/v1/users/p1', headers: ctx().secret, payload: { properties: { b: 3, c: 'new' } } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ properties: { b: 3, c: 'new' } });
    const all = await create({ project_user_id: 'p1' });
    expect(all.json()).toEqual({ properties: { a: 1, b: 3, c: 'new' } });
  });

  it('patch of an unknown user is 404 with an empty body', async () => {
    const res = await ctx().inject({ method: 'PATCH', url: '/api/v1/users/nobody', headers: ctx().secret, payload: { properties: { a: 1 } } });
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
});
