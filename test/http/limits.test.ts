import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import type { RateLimiter } from '../../src/rate-limit/rate-limiter.js';

/**
 * Projects whose requests stall in the rate limiter (past the execution limit) until the test lets
 * them go; `resumed` is called as a stalled take returns to the app.
 */
const stalled = new Map<string, { until: Promise<void>; resumed: () => void }>();
const rateLimiter: RateLimiter = {
  take: async (projectId) => {
    const stall = stalled.get(projectId);
    if (stall) {
      await stall.until;
      stall.resumed();
    }
    return { allowed: true, limit: 100, remaining: 99, resetSeconds: 0, retryAfterSeconds: 0 };
  },
  close: async () => {},
};

const ENDPOINTS = [
  ['POST', '/api/v1/users'],
  ['PATCH', '/api/v1/users/limit-user'],
  ['POST', '/api/v1/devices'],
  ['POST', '/api/v1/events'],
] as const;

describe.each(TEST_DIALECTS)('body and time limits (rule `request-limits`) on %s', (dialect) => {
  const ctx = useTestContext(dialect, { env: { REQUEST_TIMEOUT_MS: '300' }, overrides: { rateLimiter } });

  it.each(ENDPOINTS)('%s %s: a body over 1 MiB is a JSON 413', async (method, url) => {
    const payload = JSON.stringify({
      project_user_id: 'limit-user',
      name: 'x',
      properties: { pad: 'x'.repeat(1024 * 1024) },
    });
    const res = await ctx().inject({
      method,
      url,
      headers: { ...ctx().secret, 'content-type': 'application/json' },
      payload,
    });
    expect(res.statusCode).toBe(413);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual({ error: expect.any(String) });
  });

  it('a body of exactly 1 MiB is not refused for its size', async () => {
    const prefix = '{"project_user_id":"exact","pad":"';
    const payload = prefix + 'x'.repeat(1024 * 1024 - prefix.length - 2) + '"}';
    expect(Buffer.byteLength(payload)).toBe(1024 * 1024);
    const res = await ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: { ...ctx().secret, 'content-type': 'application/json' },
      payload,
    });
    expect(res.statusCode).toBe(200);
  });

  it.each(ENDPOINTS)('%s %s: a body that is not JSON is a JSON 415', async (method, url) => {
    for (const type of [
      'text/plain',
      'application/xml',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/jsonx',
    ]) {
      const res = await ctx().inject({
        method,
        url,
        headers: { ...ctx().secret, 'content-type': type },
        payload: 'project_user_id=x',
      });
      expect(res.statusCode, type).toBe(415);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json()).toEqual({ error: expect.any(String) });
    }
    const untyped = await ctx().inject({ method, url, headers: ctx().secret, payload: 'hello' });
    expect(untyped.statusCode).toBe(415);
  });

  it('JSON with a charset or in another case is accepted', async () => {
    for (const type of ['application/json; charset=utf-8', 'Application/JSON']) {
      const res = await ctx().inject({
        method: 'POST',
        url: '/api/v1/users',
        headers: { ...ctx().secret, 'content-type': type },
        payload: '{"project_user_id":"typed"}',
      });
      expect(res.statusCode, type).toBe(200);
    }
  });

  const MALFORMED = [
    '{',
    '{"a":}',
    'nul',
    '[1,',
    '"\\u12"',
    '{"project_user_id":"x"}}',
    '\u0000',
    '{"__proto__":{"x":1}}',
    '{"constructor":{"prototype":{"x":1}}}',
    '1e999999',
    '{"project_user_id":"x","properties":{"a":1e999}}',
  ];

  it.each(ENDPOINTS)('%s %s: malformed or hostile JSON is a 4xx, never a 5xx', async (method, url) => {
    for (const payload of MALFORMED) {
      const res = await ctx().inject({
        method,
        url,
        headers: { ...ctx().secret, 'content-type': 'application/json' },
        payload,
      });
      expect(res.statusCode, payload).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, payload).toBeLessThan(500);
    }
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it.each(ENDPOINTS)('%s %s: wrong types anywhere are never a 5xx', async (method, url) => {
    const bodies = [
      { project_user_id: 1 },
      { project_user_id: 'u', properties: 'x' },
      { project_user_id: 'u', properties: null },
      { project_user_id: 'u', name: 5 },
      { project_user_id: 'u', platform: 1, fcm_token: 2 },
      { events: 'x' },
      { events: [null] },
      { project_user_id: ['u'], name: 'x' },
      { project_user_id: 'u', name: 'x', timestamp: { at: 1 } },
      { project_user_id: 'u', web_push_subscription: [], platform: 'web' },
    ];
    for (const body of bodies) {
      const res = await ctx().inject({ method, url, headers: ctx().secret, payload: body });
      expect(res.statusCode, JSON.stringify(body)).toBeLessThan(500);
    }
  });

  it('a request past the execution limit answers 503 {"error":"Request timed out"}', async () => {
    const slow = await ctx().newProject('slow');
    let letGo!: () => void;
    let resumed!: () => void;
    const stallEnded = new Promise<void>((resolve) => (resumed = resolve));
    stalled.set(slow.project.project_id, { until: new Promise<void>((resolve) => (letGo = resolve)), resumed });
    const res = await ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: slow.secret,
      payload: { project_user_id: 'late' },
    });
    expect(res.statusCode).toBe(503);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual({ error: 'Request timed out' });
    expect(res.headers['x-error-reason']).toBe('REQUEST_TIMEOUT');
    expect(res.headers['x-request-id']).toBeTruthy();
    // The stalled work going on later neither crashes the app nor answers twice.
    stalled.delete(slow.project.project_id);
    letGo();
    await stallEnded;
    expect(
      (
        await ctx().inject({
          method: 'POST',
          url: '/api/v1/users',
          headers: slow.secret,
          payload: { project_user_id: 'on-time' },
        })
      ).statusCode,
    ).toBe(200);
  });

  it('fast requests are not affected by the limit', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        ctx().inject({
          method: 'POST',
          url: '/api/v1/users',
          headers: ctx().secret,
          payload: { project_user_id: `fast-${i}` },
        }),
      ),
    );
    expect(results.every((r) => r.statusCode === 200)).toBe(true);
  });
});
