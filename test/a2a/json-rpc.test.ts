import { describe, expect, it } from 'vitest';
import { rotateKey } from '../../src/projects/projects.service.js';
import { systemClock } from '../../src/lib/clock.js';
import type { RateLimiter } from '../../src/rate-limit/rate-limiter.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { createUserTask, rawPost, rpc, uid, v03Message, v1Message, type Json } from './a2a-helpers.js';

const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';

describe.each(TEST_DIALECTS)('JSON-RPC envelope, authentication and versions on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  describe('authentication (HTTP 401 with a JSON-RPC envelope)', () => {
    it('refuses a missing key', async () => {
      const res = await ctx().inject({
        method: 'POST',
        url: '/a2a',
        headers: { 'content-type': 'application/json' },
        payload: '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}',
      });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000 } });
      expect(res.headers['x-request-id']).toBeTruthy();
    });

    it('refuses a public key', async () => {
      const res = await rpc(ctx(), 'GetTask', { id: 'x' }, { key: ctx().project.public_key, version: '1.0' });
      expect(res.statusCode).toBe(401);
      expect(res.json().error.message).toMatch(/public keys are refused/);
      expect(res.json().error.data[0]).toMatchObject({
        '@type': ERROR_INFO,
        reason: 'UNAUTHENTICATED',
        domain: 'a2a-protocol.org',
      });
    });

    it('refuses an unknown and a revoked key', async () => {
      expect(
        (await rpc(ctx(), 'GetTask', { id: 'x' }, { key: 'svc_sk_doesnotexist000000000000000000000000000' }))
          .statusCode,
      ).toBe(401);
      const { project } = await ctx().newProject('rotated');
      await rotateKey(ctx().database.db, systemClock, project.project_id, 'secret');
      expect((await rpc(ctx(), 'GetTask', { id: 'x' }, { key: project.secret_key })).statusCode).toBe(401);
    });

    it('derives the project from the key: another project sees nothing', async () => {
      const task = await createUserTask(ctx());
      const other = await ctx().newProject('other');
      const res = await rpc(ctx(), 'GetTask', { id: task.id }, { key: other.project.secret_key, version: '1.0' });
      expect(res.json().error).toMatchObject({ code: -32001 });
    });
  });

  describe('envelope', () => {
    it('answers -32700 for invalid JSON with id null and HTTP 200', async () => {
      const res = await rawPost(ctx(), '{"jsonrpc":"2.0", nope');
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
    });

    it('answers -32700 for an empty body and -32602 naming the key for prototype poisoning', async () => {
      expect((await rawPost(ctx(), '')).json().error.code).toBe(-32700);
      const poisoned = (await rawPost(ctx(), '{"jsonrpc":"2.0","id":1,"method":"GetTask","__proto__":{"x":1}}')).json()
        .error;
      expect(poisoned).toMatchObject({ code: -32602, message: expect.stringContaining('__proto__') });
    });

    it.each([
      ['a batch', '[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]'],
      ['a wrong jsonrpc', '{"jsonrpc":"1.0","id":1,"method":"GetTask","params":{"id":"x"}}'],
      ['no method', '{"jsonrpc":"2.0","id":1,"params":{}}'],
      ['an object id', '{"jsonrpc":"2.0","id":{},"method":"GetTask","params":{"id":"x"}}'],
      ['array params', '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":["x"]}'],
      ['a string body', '"hello"'],
    ])('answers -32600 for %s', async (_name, payload) => {
      const res = await rawPost(ctx(), payload, { 'a2a-version': '1.0' });
      expect(res.statusCode).toBe(200);
      expect(res.json().error.code).toBe(-32600);
    });

    it('echoes string, number and null ids', async () => {
      for (const id of ['abc', 42, null])
        expect((await rpc(ctx(), 'GetTask', { id: 'nope' }, { id, version: '1.0' })).json().id).toBe(id);
    });

    it('answers HTTP 415 with -32005 for another Content-Type', async () => {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
        const res = await rawPost(ctx(), '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}', {
          'content-type': type,
        });
        expect(res.statusCode).toBe(415);
        expect(res.json().error.code).toBe(-32005);
      }
    });

    it('accepts application/a2a+json and a charset parameter', async () => {
      for (const type of ['application/a2a+json', 'application/json; charset=utf-8']) {
        const res = await rawPost(ctx(), '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}', {
          'content-type': type,
          'a2a-version': '1.0',
        });
        expect(res.json().error.code).toBe(-32001);
      }
    });

    it('answers a result as application/json; charset=utf-8 in both versions', async () => {
      for (const [version, message] of [
        ['1.0', v1Message({ skill: 'create-user', projectUserId: uid('ct') })],
        ['0.3', v03Message({ skill: 'create-user', projectUserId: uid('ct') })],
      ] as const) {
        const res = await rpc(ctx(), version === '1.0' ? 'SendMessage' : 'message/send', { message }, { version });
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
        const task = version === '1.0' ? res.json().result.task : res.json().result;
        expect(task.artifacts[0].name).toBe('user-result');
      }
    });

    it('answers HTTP 413 beyond the 1 MiB body limit', async () => {
      const res = await rawPost(
        ctx(),
        JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x', pad: 'x'.repeat(1024 * 1024) } }),
      );
      expect(res.statusCode).toBe(413);
      expect(res.json().error.code).toBe(-32600);
    });

    it("carries X-Request-ID on every answer, the caller's when sane", async () => {
      const res = await rpc(ctx(), 'GetTask', { id: 'x' }, { headers: { 'x-request-id': 'trace-123' } });
      expect(res.headers['x-request-id']).toBe('trace-123');
    });

    it('answers -32602 with field details for bad params', async () => {
      const res = await rpc(ctx(), 'GetTask', { historyLength: -1 }, { version: '1.0' });
      const error = res.json().error;
      expect(error.code).toBe(-32602);
      const badRequest = error.data.find((d: Json) => d['@type'] === 'type.googleapis.com/google.rpc.BadRequest');
      expect(badRequest.fieldViolations.map((v: Json) => v.field)).toEqual(
        expect.arrayContaining(['params.id', 'params.historyLength']),
      );
    });
  });

  describe('versions (rule `a2a-version`)', () => {
    it('A2A-Version 1.0 speaks v1', async () => {
      const task = await createUserTask(ctx());
      expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    });

    it('a patch version is reduced to Major.Minor', async () => {
      const res = await rpc(ctx(), 'GetTask', { id: 'x' }, { headers: { 'a2a-version': '1.0.3' } });
      expect(res.json().error.code).toBe(-32001);
    });

    it('the A2A-Version query parameter selects the version too', async () => {
      const res = await ctx().inject({
        method: 'POST',
        url: '/a2a?A2A-Version=1.0',
        headers: { 'content-type': 'application/json', 'x-api-key': ctx().project.secret_key },
        payload: '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}',
      });
      expect(res.json().error.code).toBe(-32001);
    });

    it.each([
      ['absent', undefined],
      ['empty', ''],
      ['0.3', '0.3'],
    ])('%s selects v0.3', async (_name, version) => {
      const headers: Record<string, string> = version === undefined ? {} : { 'a2a-version': version };
      const res = await rpc(ctx(), 'tasks/get', { id: 'nope' }, { headers });
      expect(res.json().error.code).toBe(-32001);
      expect(res.json().error.data).toMatchObject({ reason: 'TASK_NOT_FOUND' });
      const v1 = await rpc(ctx(), 'GetTask', { id: 'nope' }, { headers });
      expect(v1.json().error.code).toBe(-32601);
    });

    it.each(['2.0', '0.2', '1.1', 'latest'])('%s is -32009 VersionNotSupported', async (version) => {
      const res = await rpc(ctx(), 'GetTask', { id: 'x' }, { headers: { 'a2a-version': version } });
      expect(res.statusCode).toBe(200);
      expect(res.json().error.code).toBe(-32009);
      expect(res.json().error.data[0]).toMatchObject({
        '@type': ERROR_INFO,
        reason: 'VERSION_NOT_SUPPORTED',
        domain: 'a2a-protocol.org',
      });
    });

    it('a v0.3 method under 1.0 and an unknown method are -32601', async () => {
      expect((await rpc(ctx(), 'message/send', {}, { version: '1.0' })).json().error.code).toBe(-32601);
      expect((await rpc(ctx(), 'tasks/list', {}, { version: '0.3' })).json().error.code).toBe(-32601);
      expect((await rpc(ctx(), 'NoSuchMethod', {}, { version: '1.0' })).json().error.code).toBe(-32601);
    });
  });
});

describe.each(TEST_DIALECTS)('rate limits on %s', (dialect) => {
  const refusing: RateLimiter = {
    take: async () => ({ allowed: false, limit: 1, remaining: 0, resetSeconds: 7, retryAfterSeconds: 7 }),
    close: async () => {},
  };
  const ctx = useTestContext(dialect, { overrides: { rateLimiter: refusing } });

  it('answers HTTP 429 with a JSON-RPC error and Retry-After', async () => {
    const res = await rpc(
      ctx(),
      'SendMessage',
      {
        message: {
          messageId: uid(),
          role: 'ROLE_USER',
          parts: [{ data: { skill: 'create-user', projectUserId: 'x' } }],
        },
      },
      { version: '1.0' },
    );
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBe('7');
    expect(res.json().error).toMatchObject({ code: -32000, data: [{ reason: 'RATE_LIMITED' }] });
  });
});
