import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';

interface ImportAnswer {
  results: { line: number; project_user_id: string | null; status: string; error?: string }[];
  created: number;
  updated: number;
  failed: number;
}

const ndjson = (items: unknown[]) => items.map((i) => (typeof i === 'string' ? i : JSON.stringify(i))).join('\n');

describe.each(TEST_DIALECTS)('POST /api/v1/users:import on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  const importNdjson = (body: string, headers = ctx().secret) =>
    ctx().inject({
      method: 'POST',
      url: '/api/v1/users:import',
      headers: { ...headers, 'content-type': 'application/x-ndjson' },
      payload: body,
    });
  const importJson = (body: unknown, headers = ctx().secret) =>
    ctx().inject({ method: 'POST', url: '/api/v1/users:import', headers, payload: body as object });
  const properties = async (id: string, headers = ctx().secret) => {
    const res = await ctx().inject({ method: 'GET', url: `/api/v1/users/${encodeURIComponent(id)}`, headers });
    return res.statusCode === 200 ? res.json<{ properties: object }>().properties : res.statusCode;
  };

  it('imports NDJSON: creates new users, merges into existing ones, a result per line in order', async () => {
    const existing = await ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: ctx().secret,
      payload: { project_user_id: 'imp-existing', properties: { keep: 1, plan: 'free' } },
    });
    expect(existing.statusCode).toBe(200);
    const res = await importNdjson(
      ndjson([
        { project_user_id: 'imp-new', properties: { plan: 'pro' } },
        { project_user_id: 'imp-existing', properties: { plan: 'pro' } },
        '',
        { project_user_id: 'imp-bare' },
        // Fields an export writes are ignored.
        { project_user_id: 'imp-exported', properties: {}, created_at: '2020-01-01T00:00:00Z' },
      ]),
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<ImportAnswer>()).toEqual({
      results: [
        { line: 1, project_user_id: 'imp-new', status: 'created' },
        { line: 2, project_user_id: 'imp-existing', status: 'updated' },
        { line: 4, project_user_id: 'imp-bare', status: 'created' },
        { line: 5, project_user_id: 'imp-exported', status: 'created' },
      ],
      created: 3,
      updated: 1,
      failed: 0,
    });
    expect(await properties('imp-new')).toEqual({ plan: 'pro' });
    expect(await properties('imp-existing')).toEqual({ keep: 1, plan: 'pro' });
    expect(await properties('imp-bare')).toEqual({});
  });

  it('imports a JSON array; the same user twice in one call is created then updated', async () => {
    const res = await importJson([
      { project_user_id: 'arr-1', properties: { a: 1 } },
      { project_user_id: 'arr-1', properties: { b: 2 } },
      { project_user_id: 'arr-2', properties: { n: null, t: true } },
    ]);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<ImportAnswer>().results.map((r) => r.status)).toEqual(['created', 'updated', 'created']);
    expect(await properties('arr-1')).toEqual({ a: 1, b: 2 });
    expect(await properties('arr-2')).toEqual({ n: null, t: true });
  });

  it('bad lines fail alone, each with its reason; the good ones are written', async () => {
    const res = await importNdjson(
      ndjson([
        { project_user_id: 'mixed-ok-1', properties: { x: 1 } },
        '{"project_user_id": "broken",',
        { properties: { x: 1 } },
        { project_user_id: 'mixed-nested', properties: { deep: { no: 1 } } },
        { project_user_id: 'bad\u0001id' },
        '[1,2]',
        '{"project_user_id":"mixed-proto","properties":{"__proto__":1}}',
        { project_user_id: 'mixed-long', properties: { s: 'x'.repeat(9000) } },
        { project_user_id: 'mixed-ok-2' },
      ]),
    );
    expect(res.statusCode, res.body).toBe(200);
    const answer = res.json<ImportAnswer>();
    expect(answer).toMatchObject({ created: 2, updated: 0, failed: 7 });
    expect(answer.results.map((r) => [r.line, r.status])).toEqual([
      [1, 'created'],
      [2, 'error'],
      [3, 'error'],
      [4, 'error'],
      [5, 'error'],
      [6, 'error'],
      [7, 'error'],
      [8, 'error'],
      [9, 'created'],
    ]);
    expect(answer.results[1]!.error).toMatch(/not valid JSON/);
    expect(answer.results[2]!.error).toMatch(/project_user_id/);
    expect(answer.results[3]).toMatchObject({ project_user_id: 'mixed-nested', error: expect.stringMatching(/deep/) });
    expect(answer.results[5]!.error).toMatch(/object/);
    expect(answer.results[6]!.error).toMatch(/__proto__/);
    expect(answer.results[7]!.error).toMatch(/bytes/);
    expect(await properties('mixed-ok-1')).toEqual({ x: 1 });
    expect(await properties('mixed-ok-2')).toEqual({});
    expect(await properties('mixed-nested')).toBe(404);
  });

  it('a merge past 256 keys fails that user only and leaves it unchanged', async () => {
    const full = Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`k${i}`, i]));
    const res = await importJson([
      { project_user_id: 'keys-full', properties: full },
      { project_user_id: 'keys-full', properties: { one_more: 1 } },
      { project_user_id: 'keys-other', properties: { ok: true } },
    ]);
    expect(res.statusCode, res.body).toBe(200);
    const answer = res.json<ImportAnswer>();
    expect(answer.results.map((r) => r.status)).toEqual(['created', 'error', 'created']);
    expect(answer.results[1]!.error).toMatch(/256/);
    expect(Object.keys((await properties('keys-full')) as object)).toHaveLength(256);
  });

  it('more than 10,000 users in one call is a 413 naming the limit; nothing is written', async () => {
    const lines = Array.from({ length: 10_001 }, (_, i) => JSON.stringify({ project_user_id: `over-${i}` }));
    const res = await importNdjson(lines.join('\n'));
    expect(res.statusCode, res.body).toBe(413);
    expect(res.json<{ error: string }>().error).toMatch(/10000/);
    expect(await properties('over-0')).toBe(404);
    const arr = await importJson(Array.from({ length: 10_001 }, (_, i) => ({ project_user_id: `over-${i}` })));
    expect(arr.statusCode).toBe(413);
  });

  it('10,000 users in one call are all imported', async () => {
    const lines = Array.from({ length: 10_000 }, (_, i) =>
      JSON.stringify({ project_user_id: `bulk-${i}`, properties: { i } }),
    );
    const res = await importNdjson(lines.join('\n'));
    expect(res.statusCode).toBe(200);
    expect(res.json<ImportAnswer>()).toMatchObject({ created: 10_000, updated: 0, failed: 0 });
    expect(await properties('bulk-9999')).toEqual({ i: 9999 });
  });

  it('a body that is neither an array nor NDJSON is a 400; other content types are 415', async () => {
    const obj = await importJson({ project_user_id: 'x' });
    expect(obj.statusCode).toBe(400);
    expect(obj.json()).toEqual({ error: expect.any(String) });
    const text = await ctx().inject({
      method: 'POST',
      url: '/api/v1/users:import',
      headers: { ...ctx().secret, 'content-type': 'text/plain' },
      payload: '{"project_user_id":"x"}',
    });
    expect(text.statusCode).toBe(415);
  });

  it('needs the secret key, and imports only into the caller project', async () => {
    expect((await importJson([{ project_user_id: 'pk' }], ctx().public)).statusCode).toBe(401);
    const other = await ctx().newProject('import-other');
    const res = await importJson([{ project_user_id: 'iso-user', properties: { owner: 'b' } }], other.secret);
    expect(res.json<ImportAnswer>().created).toBe(1);
    expect(await properties('iso-user')).toBe(404);
    // The same id in A is a new user, not B's.
    const mine = await importJson([{ project_user_id: 'iso-user', properties: { owner: 'a' } }]);
    expect(mine.json<ImportAnswer>().created).toBe(1);
    expect(await properties('iso-user', other.secret)).toEqual({ owner: 'b' });
  });

  it('only the exact path /api/v1/users:import imports', async () => {
    for (const url of ['/api/v1/usersXimport', '/api/v1/users:imports', '/api/v1/users/:import'])
      expect(
        (await ctx().inject({ method: 'POST', url, headers: ctx().secret, payload: [{ project_user_id: 'p' }] }))
          .statusCode,
        url,
      ).not.toBe(200);
  });
});
