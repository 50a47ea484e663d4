import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/http/input-guard.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

const MISSING_ID = 'Project User Id must be provided';
const json = { 'content-type': 'application/json' };
const nested = (depth: number, leaf = '1') => `${'{"a":'.repeat(depth - 1)}${leaf}${'}'.repeat(depth - 1)}`;

describe.each(TEST_DIALECTS)('input handling on %s', (dialect) => {
  const ctx = useTestContext(dialect, { env: { BODY_LIMIT_BYTES: '65536' } });
  const post = (url: string, payload: string, headers: Record<string, string> = ctx().secret) =>
    ctx().inject({ method: 'POST', url, headers: { ...headers, ...json }, payload });
  const rpc = (payload: string) =>
    ctx().inject({
      method: 'POST',
      url: '/a2a',
      headers: { ...json, 'a2a-version': '1.0', 'x-api-key': ctx().project.secret_key },
      payload,
    });
  const envelope = (params: string) => `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":${params}}`;

  const expectJson400 = (res: Awaited<ReturnType<typeof post>>, reason: string, message: RegExp) => {
    expect(res.statusCode).toBe(400);
    expect(res.headers['x-error-reason']).toBe(reason);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual({ error: expect.stringMatching(message) });
  };

  describe('NUL and unpaired surrogates', () => {
    const bad = ['\\u0000', 'a\\u0000b', '\\ud800', 'x\\udfffy', '\\ud83d'];

    it.each(bad)('refuses %s in any string of a REST body (values and keys) with a 400', async (text) => {
      expectJson400(
        await post('/api/v1/events', `{"project_user_id":"u1","name":"e","properties":{"k":"${text}"}}`),
        'INVALID_TEXT',
        /NUL character or an unpaired surrogate/,
      );
      expectJson400(
        await post('/api/v1/events', `{"project_user_id":"u1","name":"e","properties":{"${text}":1}}`),
        'INVALID_TEXT',
        /NUL/,
      );
      expectJson400(
        await post('/api/v1/campaigns', `{"name":"${text}","message":{"title":"t","body":"b"}}`),
        'INVALID_TEXT',
        /NUL/,
      );
      expectJson400(
        await post(
          '/api/v1/devices',
          `{"project_user_id":"u1","platform":"web","web_push_subscription":{"endpoint":"https://push.example/${text}","keys":{"p256dh":"a","auth":"b"}}}`,
          ctx().public,
        ),
        'INVALID_TEXT',
        /NUL/,
      );
    });

    it('keeps the spec plain-text 400 on the user, send and trigger endpoints', async () => {
      const user = await post('/api/v1/users', '{"project_user_id":"a\\u0000b"}');
      expect(user.statusCode).toBe(400);
      expect(user.headers['content-type']).toMatch(/^text\/plain/);
      expect(user.body).toBe(MISSING_ID);
      expect(user.headers['x-error-reason']).toBe('INVALID_TEXT');
      const send = await post(
        '/api/v1/messages:send',
        '{"push_notifications":[{"target":{"project_user_id":"u1"},"title":"\\ud800"}]}',
      );
      expect(send.statusCode).toBe(400);
      expect(send.body).toBe('Invalid push notification parameters');
      const trigger = await post('/api/v1/campaigns/c1:trigger', '{"properties":{"x":"\\u0000"}}');
      expect(trigger.statusCode).toBe(400);
      expect(trigger.body).toBe('Failed to send campaign trigger message');
      expect(trigger.headers['x-error-reason']).toBe('INVALID_TEXT');
    });

    it.each(['a%00b', '%ED%A0%80x', 'x%00'])(
      'refuses %s in a path parameter or the query string with a 400, never a 500',
      async (segment) => {
        for (const url of [
          `/api/v1/campaigns/${segment}`,
          `/api/v1/campaigns/${segment}/triggers`,
          `/api/v1/users/${segment}/events`,
          `/api/v1/campaigns?cursor=${segment}`,
          `/api/v1/messages/${segment}`,
        ]) {
          const res = await ctx().inject({ method: 'GET', url, headers: ctx().secret });
          expect(res.statusCode, url).toBe(400);
          // A query decoder turns an encoded lone surrogate into U+FFFD: then the value is merely invalid.
          expect(res.headers['x-error-reason'], url).toMatch(
            url.includes('?') ? /^[A-Z_]+$/ : /^(INVALID_TEXT|INVALID_URL_ENCODING)$/,
          );
        }
        const del = await ctx().inject({ method: 'DELETE', url: `/api/v1/users/${segment}`, headers: ctx().secret });
        expect(del.statusCode).toBe(400);
        expect(del.body).toBe(MISSING_ID);
      },
    );

    it.each(bad)('answers -32602 for %s anywhere in A2A params', async (text) => {
      const res = await rpc(envelope(`{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"${text}"}]}}`));
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32602, message: expect.stringMatching(/NUL character or an unpaired surrogate/) },
      });
    });

    it('still accepts text with paired surrogates and other Unicode', async () => {
      const res = await post(
        '/api/v1/events',
        '{"project_user_id":"u-\\ud83d\\ude00","name":"é","properties":{"emoji":"😀 \\ud83d\\ude00","cjk":"漢字"}}',
      );
      expect(res.statusCode).toBe(200);
    });
  });

  describe('nesting depth', () => {
    it(`accepts ${MAX_JSON_DEPTH} levels and refuses ${MAX_JSON_DEPTH + 1} with a 400 naming the limit`, async () => {
      // The body object is level 1, properties level 2, so the property value may nest MAX - 2 more.
      const ok = await post(
        '/api/v1/events',
        `{"project_user_id":"u1","name":"e","properties":{"k":${nested(MAX_JSON_DEPTH - 2, '[]')}}}`,
      );
      expect(ok.statusCode).not.toBe(500);
      expect(ok.headers['x-error-reason']).not.toBe('NESTING_TOO_DEEP');
      expectJson400(
        await post(
          '/api/v1/events',
          `{"project_user_id":"u1","name":"e","properties":{"k":${nested(MAX_JSON_DEPTH, '1')}}}`,
        ),
        'NESTING_TOO_DEEP',
        new RegExp(`deeper than ${MAX_JSON_DEPTH} levels`),
      );
    });

    it('answers a 5,000-deep array with -32602 on the agent interface and 400 on REST, never a stack overflow', async () => {
      const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
      const res = await rpc(envelope(`{"message":${deep}}`));
      expect(res.statusCode).toBe(200);
      expect(res.json().error).toMatchObject({ code: -32602, message: expect.stringMatching(/nested deeper/) });
      expectJson400(
        await post('/api/v1/campaigns', `{"name":"n","message":${deep}}`),
        'NESTING_TOO_DEEP',
        /nested deeper/,
      );
      const veryDeep = `${'['.repeat(30_000)}${']'.repeat(30_000)}`;
      expect((await rpc(veryDeep)).json().error.code).toBe(-32602);
      expect((await ctx().inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    });
  });

  describe('prototype keys', () => {
    it.each(['__proto__', 'constructor', 'prototype'])(
      'refuses "%s" at any depth with a 400 / -32602 naming it',
      async (key) => {
        expectJson400(
          await post('/api/v1/events', `{"project_user_id":"u1","name":"e","properties":{"${key}":{"polluted":true}}}`),
          'FORBIDDEN_KEY',
          new RegExp(`"${key}"`),
        );
        expectJson400(
          await post('/api/v1/campaigns', `{"${key}":{"x":1},"name":"n","message":{"title":"t","body":"b"}}`),
          'FORBIDDEN_KEY',
          new RegExp(key),
        );
        const user = await post('/api/v1/users', `{"project_user_id":"u1","properties":{"${key}":1}}`);
        expect(user.statusCode).toBe(400);
        expect(user.body).toBe(MISSING_ID);
        expect(user.headers['x-error-reason']).toBe('FORBIDDEN_KEY');
        const res = await rpc(
          envelope(`{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"data":{"${key}":{"x":1}}}]}}`),
        );
        expect(res.json().error).toMatchObject({ code: -32602, message: expect.stringContaining(key) });
        const query = await ctx().inject({ method: 'GET', url: `/api/v1/campaigns?${key}=1`, headers: ctx().secret });
        expect(query.statusCode).toBe(400);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      },
    );
  });

  describe('no framework error codes', () => {
    const noFrameworkCode = (res: Awaited<ReturnType<typeof post>>) => {
      expect(JSON.stringify(res.headers)).not.toMatch(/FST_/);
      expect(res.body).not.toMatch(/FST_/);
    };

    it('names the media type, body size, JSON syntax and URL encoding failures in its own words', async () => {
      const textPlain = await ctx().inject({
        method: 'POST',
        url: '/api/v1/events',
        headers: { ...ctx().secret, 'content-type': 'text/plain' },
        payload: 'x',
      });
      expect(textPlain.statusCode).toBe(415);
      expect(textPlain.headers['x-error-reason']).toBe('UNSUPPORTED_MEDIA_TYPE');
      noFrameworkCode(textPlain);
      const tooLarge = await post(
        '/api/v1/events',
        JSON.stringify({ project_user_id: 'u1', name: 'e', properties: { k: 'x'.repeat(70_000) } }),
      );
      expect(tooLarge.statusCode).toBe(413);
      expect(tooLarge.headers['x-error-reason']).toBe('BODY_TOO_LARGE');
      noFrameworkCode(tooLarge);
      const malformed = await post('/api/v1/campaigns', '{"name":');
      expectJson400(malformed, 'INVALID_JSON', /not valid JSON/);
      noFrameworkCode(malformed);
      for (const url of ['/api/v1/campaigns/%E0%A4%A', '/api/v1/users/%ZZ/events']) {
        const res = await ctx().inject({ method: 'GET', url, headers: ctx().secret });
        expect(res.statusCode).toBe(400);
        expect(res.headers['x-error-reason']).toBe('INVALID_URL_ENCODING');
        noFrameworkCode(res);
      }
      const a2aMedia = await ctx().inject({
        method: 'POST',
        url: '/a2a',
        headers: { 'content-type': 'text/plain', 'x-api-key': ctx().project.secret_key },
        payload: 'x',
      });
      noFrameworkCode(a2aMedia);
      const a2aLarge = await rpc(envelope(JSON.stringify({ x: 'y'.repeat(70_000) })));
      expect(a2aLarge.statusCode).toBe(413);
      noFrameworkCode(a2aLarge);
    });
  });
});
