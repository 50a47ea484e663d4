import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { logLines } from '../helpers/processes.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Log lines written by the app, to check that they carry the request id. */
let logText = '';
const logger = pino(
  { level: 'info' },
  new Writable({ write: (chunk: Buffer, _enc, done) => ((logText += chunk.toString('utf8')), done()) }),
);

/** A clock that can be made to fail: the generic 500 path (an unexpected error in a service). */
const faults = { clock: false };
const clock = {
  now: () => {
    if (faults.clock) throw new Error('clock exploded');
    return Date.now();
  },
};

describe.each(TEST_DIALECTS)('X-Request-ID (rule `request-id`) on %s', (dialect) => {
  const ctx = useTestContext(dialect, { overrides: { logger, clock } });
  const json = () => ({ ...ctx().secret, 'content-type': 'application/json' });

  it('is on every response, whatever its status', async () => {
    const cases: [number, Parameters<ReturnType<typeof ctx>['inject']>[0] & { method: string; url: string }][] = [
      [200, { method: 'POST', url: '/api/v1/users', headers: json(), payload: '{"project_user_id":"rid"}' }],
      [200, { method: 'GET', url: '/healthz' }],
      [400, { method: 'POST', url: '/api/v1/users', headers: json(), payload: '{"project_user_id":' }],
      [400, { method: 'POST', url: '/api/v1/devices', headers: json(), payload: '{}' }],
      [400, { method: 'DELETE', url: '/api/v1/users/%E0%A4%A', headers: ctx().secret }],
      [401, { method: 'POST', url: '/api/v1/users', payload: { project_user_id: 'x' } }],
      [404, { method: 'GET', url: '/no/such/route' }],
      [404, { method: 'PATCH', url: '/api/v1/users/nobody', headers: json(), payload: '{}' }],
      [
        413,
        {
          method: 'POST',
          url: '/api/v1/users',
          headers: json(),
          payload: JSON.stringify({ project_user_id: 'big', pad: 'x'.repeat(1_100_000) }),
        },
      ],
      [
        415,
        {
          method: 'POST',
          url: '/api/v1/users',
          headers: { ...ctx().secret, 'content-type': 'text/plain' },
          payload: 'hi',
        },
      ],
      [500, { method: 'POST', url: '/api/v1/users', headers: json(), payload: '{"project_user_id":"x"}' }],
    ];
    for (const [status, request] of cases) {
      faults.clock = status === 500;
      const res = await ctx()
        .inject(request)
        .finally(() => (faults.clock = false));
      expect(res.statusCode, `${request.method} ${request.url}`).toBe(status);
      expect(res.headers['x-request-id'], `${request.method} ${request.url}`).toMatch(UUID);
    }
  });

  it('a 500 shows no internal text', async () => {
    faults.clock = true;
    const res = await ctx()
      .inject({ method: 'POST', url: '/api/v1/users', headers: ctx().secret, payload: { project_user_id: 'x' } })
      .finally(() => (faults.clock = false));
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ error: 'Internal server error' });
    expect(res.body).not.toContain('exploded');
  });

  it.each([
    ['a UUID', '0b7c1a52-8d7e-4a9f-9c3e-2f1d0e6b5a41'],
    ['a short token', 'abc'],
    ['128 printable characters', `${'r'.repeat(120)}-._~!#$%`],
  ])("echoes the caller's value when it is %s", async (_label, given) => {
    for (const request of [
      { method: 'GET' as const, url: '/healthz', headers: { 'x-request-id': given } },
      {
        method: 'POST' as const,
        url: '/api/v1/users',
        headers: { 'x-request-id': given },
        payload: { project_user_id: 'x' },
      },
      { method: 'DELETE' as const, url: '/api/v1/users/%zz', headers: { 'x-request-id': given } },
    ]) {
      expect((await ctx().inject(request)).headers['x-request-id']).toBe(given);
    }
  });

  it.each([
    ['129 characters', 'r'.repeat(129)],
    ['a tab', 'a\tb'],
    ['a space', 'a b'],
    ['non-ASCII text', 'идентификатор'],
    ['empty', ''],
  ])('replaces a value with %s', async (_label, given) => {
    const res = await ctx().inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': given } });
    expect(res.headers['x-request-id']).toMatch(UUID);
  });

  it('every log line of a request carries its id', async () => {
    logText = '';
    await ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: { ...json(), 'x-request-id': 'trace-me-123' },
      payload: '{"project_user_id":',
    });
    const lines = logLines(logText).filter(
      (line) => JSON.stringify(line).includes('/api/v1/users') || line.reason !== undefined,
    );
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line.reqId).toBe('trace-me-123');
  });
});
