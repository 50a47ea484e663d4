import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';

/** Rule `user-id`: any string of 1 to 255 characters without control characters is an id, in a body or a path. */
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
  ['a backslash and quotes', 'back\\slash "quoted"'],
  ['255 emoji', '😀'.repeat(255)],
  ['email-like', 'Alice.Example+tag@example.com'],
] as const;

describe.each(TEST_DIALECTS)('unusual project_user_id values on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  const create = (id: string, properties: Record<string, unknown> = {}) =>
    ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: ctx().secret,
      payload: { project_user_id: id, properties },
    });
  const path = (id: string) => `/api/v1/users/${encodeURIComponent(id)}`;

  it.each(ODD_IDS)('%s round-trips: create by body, patch and delete by encoded path', async (_label, id) => {
    expect((await create(id, { a: 1 })).statusCode).toBe(200);
    const patched = await ctx().inject({
      method: 'PATCH',
      url: path(id),
      headers: ctx().secret,
      payload: { properties: { b: 2 } },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toEqual({ properties: { b: 2 } });
    expect((await create(id)).json()).toEqual({ properties: { a: 1, b: 2 } });

    const rows = await ctx()
      .database.db.selectFrom('users')
      .select('project_user_id')
      .where('project_id', '=', ctx().project.project_id)
      .where('project_user_id', '=', id)
      .execute();
    expect(rows).toEqual([{ project_user_id: id }]);

    const deleted = await ctx().inject({ method: 'DELETE', url: path(id), headers: ctx().secret });
    expect(deleted.statusCode).toBe(200);
    expect(
      (await ctx().inject({ method: 'PATCH', url: path(id), headers: ctx().secret, payload: { properties: { c: 3 } } }))
        .statusCode,
    ).toBe(404);
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
      const res = await ctx().inject({
        method: 'PATCH',
        url,
        headers: ctx().secret,
        payload: { properties: { via: url } },
      });
      expect(res.statusCode, url).toBe(200);
      expect((await create(id)).json<{ properties: Record<string, unknown> }>().properties.via).toBe(url);
    }
  });

  it('an encoded id that does not exist is a 404 on PATCH and a 200 on DELETE', async () => {
    expect(
      (
        await ctx().inject({
          method: 'PATCH',
          url: '/api/v1/users/%F0%9F%98%80-none',
          headers: ctx().secret,
          payload: {},
        })
      ).statusCode,
    ).toBe(404);
    expect(
      (await ctx().inject({ method: 'DELETE', url: '/api/v1/users/%F0%9F%98%80-none', headers: ctx().secret })).json(),
    ).toEqual({});
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

  it('dot-segment ids are reachable over raw HTTP (clients that normalise paths cannot send them)', async () => {
    await create('..', { dots: 2 });
    await create('.', { dots: 1 });
    await ctx().app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = ctx().app.server.address() as AddressInfo;
    const send = (method: string, rawPath: string, body?: object) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            method,
            path: rawPath,
            headers: { ...ctx().secret, ...(payload ? { 'content-type': 'application/json' } : {}) },
          },
          (res) => {
            let text = '';
            res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
            res.on('end', () => resolve({ status: res.statusCode!, body: text }));
          },
        );
        req.on('error', reject);
        req.end(payload);
      });
    expect(await send('PATCH', '/api/v1/users/%2E%2E', { properties: { patched: true } })).toEqual({
      status: 200,
      body: '{"properties":{"patched":true}}',
    });
    expect((await create('..')).json()).toEqual({ properties: { dots: 2, patched: true } });
    expect((await send('DELETE', '/api/v1/users/.')).status).toBe(200);
    expect(
      (await ctx().inject({ method: 'PATCH', url: '/api/v1/users/x', headers: ctx().secret, payload: {} })).statusCode,
    ).toBe(404);
    expect((await create('.')).json()).toEqual({ properties: {} });
  });

  it('odd ids never produce a 5xx on the device and event lookups', async () => {
    for (const url of [
      '/api/v1/users/%00/devices',
      '/api/v1/users/%00/events',
      '/api/v1/users/%E0%A4%A/events',
      `/api/v1/users/${'x'.repeat(5000)}/devices`,
      `/api/v1/users/${'x'.repeat(300)}/events`,
      '/api/v1/users/%ED%A0%80/events',
      '/api/v1/devices/%00',
      '/api/v1/devices/%E0%A4%A',
    ]) {
      const method = url.startsWith('/api/v1/devices') ? 'DELETE' : 'GET';
      const res = await ctx().inject({ method, url, headers: ctx().secret });
      expect(res.statusCode, url).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, url).toBeLessThan(500);
      expect(res.headers['x-request-id']).toBeTruthy();
    }
  });
});
