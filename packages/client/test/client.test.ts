/// <reference types="vite/client" />
import { describe, expect, it } from 'vitest';
import { createHeraldClient, HeraldError, type HeraldClientOptions } from '../src/index.js';
import { retryAfterMs } from '../src/errors.js';

interface Seen {
  method: string;
  url: string;
  headers: Headers;
  body: string;
}

/** A stand-in for Herald's HTTP answers, recording what the client sent; answers are given in order. */
function scripted(answers: (() => Response)[]) {
  const seen: Seen[] = [];
  const waits: number[] = [];
  const options: HeraldClientOptions = {
    baseUrl: 'https://herald.test/',
    projectId: 'proj_1',
    apiKey: 'sk_1',
    fetch: async (request) => {
      seen.push({ method: request.method, url: request.url, headers: request.headers, body: await request.text() });
      const next = answers.shift();
      if (!next) throw new Error('no more answers');
      return next();
    },
    sleep: async (ms) => void waits.push(ms),
  };
  return { seen, waits, options };
}

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}) =>
  () =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

describe('@herald/client', () => {
  it('sends the keys, a JSON body and an Idempotency-Key on mutations, none on reads', async () => {
    const { seen, options } = scripted([json(200, { properties: { plan: 'pro' } }), json(200, { devices: [] })]);
    const herald = createHeraldClient(options);
    const { data } = await herald.POST('/api/v1/users', {
      body: { project_user_id: 'u1', properties: { plan: 'pro' } },
    });
    expect(data?.properties).toEqual({ plan: 'pro' });
    await herald.GET('/api/v1/users/{project_user_id}/devices', { params: { path: { project_user_id: 'u 1' } } });
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'POST https://herald.test/api/v1/users',
      'GET https://herald.test/api/v1/users/u%201/devices',
    ]);
    expect(seen[0]!.headers.get('x-service-project-id')).toBe('proj_1');
    expect(seen[0]!.headers.get('x-service-api-key')).toBe('sk_1');
    expect(seen[0]!.headers.get('idempotency-key')).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(seen[0]!.body)).toEqual({ project_user_id: 'u1', properties: { plan: 'pro' } });
    expect(seen[1]!.headers.get('idempotency-key')).toBeNull();
  });

  it('retries 429 and 503 after Retry-After with the same Idempotency-Key and body', async () => {
    const { seen, waits, options } = scripted([
      json(429, { error: 'Rate limit exceeded' }, { 'retry-after': '2' }),
      json(503, { error: 'Database unavailable, retry later' }, { 'retry-after': '1' }),
      json(200, { delivery_results: [] }),
    ]);
    const herald = createHeraldClient(options);
    const { data } = await herald.POST('/api/v1/messages:send', {
      body: { push_notifications: [{ target: { project_user_id: 'u1' }, title: 'Hi' }] },
    });
    expect(data).toEqual({ delivery_results: [] });
    expect(waits).toEqual([2000, 1000]);
    expect(seen).toHaveLength(3);
    expect(new Set(seen.map((s) => s.headers.get('idempotency-key'))).size).toBe(1);
    expect(new Set(seen.map((s) => s.body)).size).toBe(1);
  });

  it('keeps a caller-given Idempotency-Key', async () => {
    const { seen, options } = scripted([json(200, { properties: {} })]);
    await createHeraldClient(options).POST('/api/v1/users', {
      body: { project_user_id: 'u1' },
      headers: { 'Idempotency-Key': 'order-1001' },
    });
    expect(seen[0]!.headers.get('idempotency-key')).toBe('order-1001');
  });

  it('backs off exponentially without Retry-After, and gives up after maxRetries with a HeraldError', async () => {
    const busy = json(503, { error: 'busy' });
    const { seen, waits, options } = scripted([busy, busy, busy]);
    const herald = createHeraldClient({ ...options, retry: { maxRetries: 2, baseDelayMs: 100 } });
    const error = await herald.GET('/api/v1/campaigns').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HeraldError);
    expect((error as HeraldError).status).toBe(503);
    expect(seen).toHaveLength(3);
    expect(waits).toHaveLength(2);
    expect(waits[0]).toBeGreaterThanOrEqual(50);
    expect(waits[0]).toBeLessThanOrEqual(100);
    expect(waits[1]).toBeGreaterThanOrEqual(100);
    expect(waits[1]).toBeLessThanOrEqual(200);
  });

  it('does not wait for a Retry-After beyond maxDelayMs: the 429 is thrown at once', async () => {
    const { seen, waits, options } = scripted([json(429, { error: 'Rate limit exceeded' }, { 'retry-after': '3600' })]);
    const error = (await createHeraldClient(options)
      .GET('/api/v1/campaigns')
      .catch((e: unknown) => e)) as HeraldError;
    expect([error.status, error.retryAfterSeconds, seen.length, waits.length]).toEqual([429, 3600, 1, 0]);
  });

  it('retries a network failure, never a 4xx', async () => {
    let calls = 0;
    const { options } = scripted([]);
    const herald = createHeraldClient({
      ...options,
      fetch: async () => {
        calls++;
        if (calls === 1) throw new TypeError('fetch failed');
        return json(404, { error: 'Not found' }, { 'x-error-reason': 'CAMPAIGN_NOT_FOUND', 'x-request-id': 'r1' })();
      },
    });
    const error = (await herald
      .GET('/api/v1/campaigns/{campaign_id}', { params: { path: { campaign_id: 'nope' } } })
      .catch((e: unknown) => e)) as HeraldError;
    expect(calls).toBe(2);
    expect(error).toBeInstanceOf(HeraldError);
    expect([error.status, error.reason, error.requestId, error.message]).toEqual([
      404,
      'CAMPAIGN_NOT_FOUND',
      'r1',
      'GET /api/v1/campaigns/nope: 404 Not found',
    ]);
  });

  it('reads text/plain errors as their message', async () => {
    const { options } = scripted([
      () =>
        new Response('Project User Id must be provided', {
          status: 400,
          headers: { 'content-type': 'text/plain; charset=utf-8', 'x-error-reason': 'INVALID_PROJECT_USER_ID' },
        }),
    ]);
    const error = (await createHeraldClient(options)
      .DELETE('/api/v1/users/{project_user_id}', { params: { path: { project_user_id: 'x' } } })
      .catch((e: unknown) => e)) as HeraldError;
    expect([error.status, error.body, error.reason]).toEqual([
      400,
      'Project User Id must be provided',
      'INVALID_PROJECT_USER_ID',
    ]);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-01-15T09:30:00Z');
    expect(retryAfterMs('5', now)).toBe(5000);
    expect(retryAfterMs('Thu, 15 Jan 2026 09:30:10 GMT', now)).toBe(10_000);
    expect(retryAfterMs('soon', now)).toBe(0);
    expect(retryAfterMs(null, now)).toBe(0);
  });
});

describe('@herald/client sources', () => {
  it('import nothing Node-only (it runs in Deno and browsers too)', async () => {
    const sources = import.meta.glob('../src/*.ts', { query: '?raw', import: 'default', eager: true });
    expect(Object.keys(sources).length).toBeGreaterThanOrEqual(2);
    for (const [file, text] of Object.entries(sources))
      expect(String(text), file).not.toMatch(/from ['"](node:|fs|path|http|https|crypto|buffer|process)['"/]/);
  });
});
