import { describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';

const MISSING = 'Project User Id must be provided';

/** Rules `error-bodies`, `user-id` and `user-properties`: every invalid input on the user endpoints is the exact plain-text 400. */
function expectPlain400(res: LightMyRequestResponse, reason?: string): void {
  expect(res.statusCode, res.body).toBe(400);
  expect(res.headers['content-type']).toMatch(/^text\/plain/);
  expect(res.body).toBe(MISSING);
  expect(res.headers['x-error-reason']).toMatch(/^[A-Z][A-Z0-9_]+$/);
  if (reason) expect(res.headers['x-error-reason']).toBe(reason);
}

const manyProperties = (count: number, prefix = 'k') =>
  Object.fromEntries(Array.from({ length: count }, (_, i) => [`${prefix}${i}`, i]));

describe.each(TEST_DIALECTS)('user endpoint 400s on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  const postRaw = (payload: string) =>
    ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: { ...ctx().secret, 'content-type': 'application/json' },
      payload,
    });
  const post = (body: unknown) => postRaw(JSON.stringify(body));
  const patchRaw = (id: string, payload: string) =>
    ctx().inject({
      method: 'PATCH',
      url: `/api/v1/users/${encodeURIComponent(id)}`,
      headers: { ...ctx().secret, 'content-type': 'application/json' },
      payload,
    });
  const patch = (id: string, body: unknown) => patchRaw(id, JSON.stringify(body));
  const stored = async (id: string) =>
    (await post({ project_user_id: id })).json<{ properties: Record<string, unknown> }>().properties;

  describe('project_user_id', () => {
    it.each([
      ['missing', { properties: { a: 1 } }],
      ['empty', { project_user_id: '' }],
      ['a number', { project_user_id: 42 }],
      ['null', { project_user_id: null }],
      ['an object', { project_user_id: { id: 'x' } }],
      ['an array', { project_user_id: ['x'] }],
      ['a boolean', { project_user_id: true }],
      ['over 255 characters', { project_user_id: 'x'.repeat(256) }],
      ['over 255 code points (emoji)', { project_user_id: '😀'.repeat(256) }],
      ['with a newline', { project_user_id: 'a\nb' }],
      ['with NUL', { project_user_id: 'a\u0000b' }],
      ['with DEL', { project_user_id: 'a\u007fb' }],
      ['with a C1 control', { project_user_id: 'a\u0085b' }],
      ['with a lone surrogate', { project_user_id: 'a\ud800b' }],
    ])('is rejected when %s', async (_label, body) => {
      expectPlain400(await post(body));
    });

    it('accepts exactly 255 characters, also as code points beyond the BMP', async () => {
      expect((await post({ project_user_id: 'x'.repeat(255) })).statusCode).toBe(200);
      expect((await post({ project_user_id: '😀'.repeat(255) })).statusCode).toBe(200);
    });
  });

  describe('body', () => {
    it.each([
      ['malformed JSON', '{"project_user_id":'],
      ['trailing garbage', '{"project_user_id":"a"} x'],
      ['an array', '[{"project_user_id":"a"}]'],
      ['a string', '"a"'],
      ['a number', '12'],
      ['null', 'null'],
      ['empty', ''],
    ])('is rejected when %s', async (_label, payload) => {
      expectPlain400(await postRaw(payload));
    });

    it('rejects a malformed PATCH body and an array body', async () => {
      await post({ project_user_id: 'p-bad' });
      expectPlain400(await patchRaw('p-bad', '{"properties":'));
      expectPlain400(await patchRaw('p-bad', '[]'));
      expectPlain400(await patchRaw('p-bad', 'null'));
      expectPlain400(await patchRaw('p-bad', '"text"'));
      expectPlain400(await patch('p-bad', { properties: [1, 2] }));
    });
  });

  describe('properties (rule `user-properties`)', () => {
    it.each([
      ['not an object (string)', 'abc'],
      ['not an object (array)', [1]],
      ['not an object (number)', 3],
      ['a nested object value', { a: { b: 1 } }],
      ['a nested array value', { a: [1, 2] }],
      ['an empty key', { '': 1 }],
      ['a key over 128 characters', { ['k'.repeat(129)]: 1 }],
      ['a string value over 8 KiB', { a: 'x'.repeat(8193) }],
      ['a string value over 8 KiB in UTF-8 bytes', { a: 'é'.repeat(4097) }],
      ['a NUL inside a value', { a: 'x\u0000y' }],
      ['a NUL inside a key', { 'a\u0000': 1 }],
      ['a lone surrogate in a value', { a: '\udc00' }],
      ['more than 256 keys', manyProperties(257)],
    ])('rejects %s on create and on PATCH', async (_label, properties) => {
      expectPlain400(await post({ project_user_id: 'props', properties }));
      expectPlain400(await patch('props', { properties }));
    });

    it('accepts the limits exactly', async () => {
      const res = await post({
        project_user_id: 'limits',
        properties: { ['k'.repeat(128)]: 'x'.repeat(8192), e: 'é'.repeat(4096), n: -1.5e300, t: false, z: null },
      });
      expect(res.statusCode).toBe(200);
      expect(Object.keys(res.json<{ properties: object }>().properties)).toHaveLength(5);
      expect((await post({ project_user_id: 'limits-256', properties: manyProperties(256) })).statusCode).toBe(200);
    });

    it('a merge that would pass 256 keys is refused and changes nothing', async () => {
      await post({ project_user_id: 'full', properties: manyProperties(250) });
      expectPlain400(
        await post({ project_user_id: 'full', properties: manyProperties(7, 'new') }),
        'TOO_MANY_PROPERTIES',
      );
      expectPlain400(
        await patch('full', { properties: { ...manyProperties(7, 'more'), k0: 'changed' } }),
        'TOO_MANY_PROPERTIES',
      );
      const after = await stored('full');
      expect(Object.keys(after)).toHaveLength(250);
      expect(after.k0).toBe(0);
      // Overwriting existing keys never counts twice.
      expect(
        (await post({ project_user_id: 'full', properties: { ...manyProperties(250), ...manyProperties(6, 'new') } }))
          .statusCode,
      ).toBe(200);
      expect(Object.keys(await stored('full'))).toHaveLength(256);
    });
  });

  describe('path id', () => {
    it('an empty path id is missing on PATCH and DELETE', async () => {
      expectPlain400(
        await ctx().inject({
          method: 'PATCH',
          url: '/api/v1/users/',
          headers: ctx().secret,
          payload: { properties: {} },
        }),
        'MISSING_PROJECT_USER_ID',
      );
      expectPlain400(
        await ctx().inject({ method: 'DELETE', url: '/api/v1/users/', headers: ctx().secret }),
        'MISSING_PROJECT_USER_ID',
      );
      expectPlain400(
        await ctx().inject({ method: 'DELETE', url: '/api/v1/users', headers: ctx().secret }),
        'MISSING_PROJECT_USER_ID',
      );
    });

    it.each([
      ['over 255 characters', `/api/v1/users/${'x'.repeat(256)}`],
      ['an encoded control character', '/api/v1/users/a%0Ab'],
      ['an encoded NUL', '/api/v1/users/%00'],
      ['invalid percent-encoding', '/api/v1/users/%E0%A4%A'],
      ['a stray percent sign', '/api/v1/users/100%'],
      ['a lone surrogate as UTF-8 bytes', '/api/v1/users/%ED%A0%80'],
      ['far longer than any id', `/api/v1/users/${'x'.repeat(5000)}`],
    ])('is rejected on PATCH and DELETE when %s', async (_label, url) => {
      expectPlain400(
        await ctx().inject({
          method: 'PATCH',
          url,
          headers: { ...ctx().secret, 'content-type': 'application/json' },
          payload: '{}',
        }),
      );
      const res = await ctx().inject({ method: 'DELETE', url, headers: ctx().secret });
      expectPlain400(res);
      expect(res.headers['x-request-id']).toBeTruthy();
    });
  });

  it('PATCH with a wrong property type leaves the user unchanged', async () => {
    await post({ project_user_id: 'unchanged', properties: { a: 1 } });
    expectPlain400(await patch('unchanged', { properties: { a: 2, b: { nested: true } } }));
    expect(await stored('unchanged')).toEqual({ a: 1 });
  });
});
