import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';

/** R3: any string of 1 to 255 characters without control characters is an id, in a body or a path. */
const ODD_IDS = [
  ['a space inside', 'john doe'],
  ['leading and trailing spaces', '  padded  '],
  ['only a space', ' '],
  ['an emoji', '😀 user'],
  ['CJK', '用户-名前-사용자'],
  ['a slash', 'team/alice'],
  ['a percent sign', '100%'],
  ['a literal %20', 'a%20b'],
  ['a literal %2F', 'x%2Fy'],
  ['reserved URL characters', "a?b#c&d=e+f;g,h:i@j!k*l'm(n)o[p]q"],
  ['a dot segment', '..'],
  ['a backslash and quotes', 'back\\slash "quoted"'],
  ['255 emoji', '😀'.repeat(255)],
  ['email-like', 'Alice.Example+tag@example.com'],
] as const;

describe.each(TEST_DIALECTS)('unusual project_user_id values on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  const create = (id: string, properties: Record<string, unknown> = {}) =>
    ctx().inject({ method: 'POST', url: '/api/v1/users', headers: ctx().secret, payload: { project_user_id: id, properties } });
  // Dots too: clients (and inject) resolve `..` segments before sending.
  const path = (id: string) => `/api/v1/users/${encodeURIComponent(id).replace(/\./g, '%2E')}`;

  it.each(ODD_IDS)('%s round-trips: create by body, patch and delete by encoded path', async (_label, id) => {
    expect((await create(id, { a: 1 })).statusCode).toBe(200);
    const patched = await ctx().inject({ method: 'PATCH', url: path(id), headers: ctx().secret, payload: { properties: { b: 2 } } });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toEqual({ properties: { b: 2 } });
    expect((await create(id)).json()).toEqual({ properties: { a: 1, b: 2 } });

    const rows = await ctx().database.db.selectFrom('users').select('project_user_id').where('project_id', '=', ctx().project.project_id).where('project_user_id', '=', id).execute();
    expect(rows).toEqual([{ project_user_id: id }]);

    const deleted = await ctx().inject({ method: 'DELETE', url: path(id), headers: ctx().secret });
    expect(deleted.statusCode).toBe(200);
    expect((await ctx().inject({ method: 'PATCH', url: path(id), headers: ctx().secret, payload: { properties: { c: 3 } } })).statusCode).toBe(404);
  });

  it('percent-decodes path ids: %20, %2F and %25 name the decoded id', async () => {
    await create('a b');
    await create('a/b');
    await create('a%b');
    for (const [url, id] of [
      ['/api/v1/users/a%20b', 'a b'],
      ['/api/v1/users/a%2Fb', 'a/b'],
      ['/api/v1/users/a%2fb', 'a/b'],
      ['/api/v1/users/a%25b', 'a%b'],
    ] as const) {
      const res = await ctx().inject({ method: 'PATCH', url, headers: ctx().secret, payload: { properties: { via: url } } });
      expect(res.statusCode, url).toBe(200);
      expect((await create(id)).json<{ properties: Record<string, unknown> }>().properties.via).toBe(url);
    }
  });

  it('an encoded id that does not exist is a 404 on PATCH and a 200 on DELETE', async () => {
    expect((await ctx().inject({ method: 'PATCH', url: '/api/v1/users/%F0%9F%98%80-none', headers: ctx().secret, payload: {} })).statusCode).toBe(404);
    expect((await ctx().inject({ method: 'DELETE', url: '/api/v1/users/%F0%9F%98%80-none', headers: ctx().secret })).json()).toEqual({});
  });

  it('ids differing only in case or in Unicode normalisation are different users', async () => {
    await create('Case', { v: 'upper' });
    await create('case', { v: 'lower' });
    await create('e\u0301', { v: 'decomposed' });
    await create('\u00e9', { v: 'composed' });
    expect((await create('Case')).json()).toEqual({ properties: { v: 'upper' } });
    expect((await create('case')).json()).toEqual({ properties: { v: 'lower' } });
    expect((await create('e\u0301')).json()).toEqual({ properties: { v: 'decomposed' } });
    expect((await create('\u00e9')).json()).toEqual({ properties: { v: 'composed' } });
  });

  it('odd ids never produce a 5xx on the device and event lookups', async () => {
    for (const url of ['/api/v1/users/%00/devices', '/api/v1/users/%E0%A4%A/events', `/api/v1/users/${'x'.repeat(5000)}/devices`, '/api/v1/users/%ED%A0%80/events']) {
      const res = await ctx().inject({ method: 'GET', url, headers: ctx().secret });
      expect(res.statusCode, url).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, url).toBeLessThan(500);
      expect(res.headers['x-request-id']).toBeTruthy();
    }
  });
});
