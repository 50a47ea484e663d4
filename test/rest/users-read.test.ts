import { describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';

interface UserSummary {
  project_user_id: string;
  properties: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}
interface Page {
  users: UserSummary[];
  next_cursor: string | null;
}

function expectJsonError(res: LightMyRequestResponse, status: number, message?: RegExp): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.json()).toEqual({ error: expect.any(String) });
  if (message) expect(res.json<{ error: string }>().error).toMatch(message);
}

const webPush = {
  endpoint: 'https://push.example.com/send/secret-endpoint-123',
  keys: {
    p256dh: 'BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM',
    auth: 'tBHItJI5svbpez7KI4CCXg',
  },
};

describe.each(TEST_DIALECTS)('reading users back on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  const createUser = (project_user_id: string, properties: object = {}, headers = ctx().secret) =>
    ctx().inject({ method: 'POST', url: '/api/v1/users', headers, payload: { project_user_id, properties } });
  const getUser = (id: string, headers = ctx().secret) =>
    ctx().inject({ method: 'GET', url: `/api/v1/users/${encodeURIComponent(id)}`, headers });
  const list = (query: Record<string, string>, headers = ctx().secret) =>
    ctx().inject({ method: 'GET', url: '/api/v1/users', query, headers });

  it('GET /users/{id} answers properties, timestamps, devices without secrets and the latest 20 events', async () => {
    expect((await createUser('reader', { plan: 'pro', score: 3, vip: true, note: null })).statusCode).toBe(200);
    const devices = [
      { project_user_id: 'reader', platform: 'android', fcm_token: 'fcm-secret-token-xyz' },
      { project_user_id: 'reader', platform: 'web', web_push_subscription: webPush },
    ];
    for (const payload of devices) {
      const res = await ctx().inject({ method: 'POST', url: '/api/v1/devices', headers: ctx().public, payload });
      expect(res.statusCode, res.body).toBe(200);
    }
    const base = Date.parse('2026-01-01T00:00:00.000Z');
    const events = Array.from({ length: 25 }, (_, i) => ({
      project_user_id: 'reader',
      name: `event-${i}`,
      properties: { n: i },
      timestamp: base + i * 1000,
    }));
    const tracked = await ctx().inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: ctx().public,
      payload: { events },
    });
    expect(tracked.statusCode, tracked.body).toBe(200);

    const res = await getUser('reader');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{
      project_user_id: string;
      properties: object;
      created_at: string;
      updated_at: string;
      devices: Record<string, unknown>[];
      recent_events: { event_id: string; name: string; properties: object; timestamp: string }[];
    }>();
    expect(body.project_user_id).toBe('reader');
    expect(body.properties).toEqual({ plan: 'pro', score: 3, vip: true, note: null });
    expect(Date.parse(body.created_at)).not.toBeNaN();
    expect(Date.parse(body.updated_at)).toBeGreaterThanOrEqual(Date.parse(body.created_at));
    expect(body.devices.map((d) => d.provider).sort()).toEqual(['fcm', 'webpush']);
    for (const d of body.devices)
      expect(Object.keys(d).sort()).toEqual(
        [
          'created_at',
          'device_id',
          'disabled_reason',
          'platform',
          'project_user_id',
          'provider',
          'status',
          'updated_at',
        ].sort(),
      );
    // Tokens, endpoints and subscription keys never appear.
    for (const secret of ['fcm-secret-token-xyz', 'secret-endpoint-123', webPush.keys.p256dh, webPush.keys.auth])
      expect(res.body).not.toContain(secret);
    expect(body.recent_events).toHaveLength(20);
    expect(body.recent_events.map((e) => e.name)).toEqual(Array.from({ length: 20 }, (_, i) => `event-${24 - i}`));
    expect(body.recent_events[0]).toEqual({
      event_id: expect.any(String),
      name: 'event-24',
      properties: { n: 24 },
      timestamp: new Date(base + 24_000).toISOString(),
    });
  });

  it('GET /users/{id} is 404 with a JSON error for an unknown user, and 400 for an invalid id', async () => {
    expectJsonError(await getUser('nobody-here'), 404, /nobody-here/);
    expect((await getUser('nobody-here')).headers['x-error-reason']).toBe('USER_NOT_FOUND');
    expectJsonError(await getUser('bad\u0001id'), 400);
  });

  it('reading needs the secret key: the public key and no key are refused', async () => {
    await createUser('guarded');
    expect((await getUser('guarded', ctx().public)).statusCode).toBe(401);
    expect((await getUser('guarded', {})).statusCode).toBe(401);
    expect((await list({}, ctx().public)).statusCode).toBe(401);
  });

  it('project A cannot read or list project B users', async () => {
    const other = await ctx().newProject('other');
    expect((await createUser('b-only-user', { secret: 'b' }, other.secret)).statusCode).toBe(200);
    expectJsonError(await getUser('b-only-user'), 404);
    const page = (await list({ prefix: 'b-only' })).json<Page>();
    expect(page.users).toEqual([]);
    // And B sees its own.
    expect((await getUser('b-only-user', other.secret)).statusCode).toBe(200);
    expect((await list({ prefix: 'b-only' }, other.secret)).json<Page>().users).toHaveLength(1);
  });

  it('lists with keyset pagination in a stable order, by prefix, every user exactly once', async () => {
    const ids = Array.from({ length: 23 }, (_, i) => `page-${String(i).padStart(2, '0')}`);
    for (const id of ids) await createUser(id, { i: Number(id.slice(5)) });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await list({ prefix: 'page-', limit: '10', ...(cursor ? { cursor } : {}) });
      expect(res.statusCode, res.body).toBe(200);
      const page = res.json<Page>();
      expect(page.users.length).toBeLessThanOrEqual(10);
      seen.push(...page.users.map((u) => u.project_user_id));
      cursor = page.next_cursor;
      // A user created meanwhile (before the cursor) does not shift the pages.
      if (pages === 0) await createUser('page-!', {});
      pages++;
    } while (cursor !== null);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);
    const first = (await list({ prefix: 'page-0', limit: '1000' })).json<Page>();
    expect(first.users.map((u) => u.project_user_id)).toEqual(ids.slice(0, 10));
    expect(first.next_cursor).toBeNull();
    expect(first.users[3]).toEqual({
      project_user_id: 'page-03',
      properties: { i: 3 },
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
  });

  it('filters with the campaign condition language, evaluated in SQL (properties and events)', async () => {
    await createUser('filter-a', { plan: 'pro', score: 10 });
    await createUser('filter-b', { plan: 'free', score: 50 });
    await createUser('filter-c', { plan: 'pro', score: 90 });
    const buy = await ctx().inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: ctx().public,
      payload: { project_user_id: 'filter-c', name: 'purchase' },
    });
    expect(buy.statusCode).toBe(200);
    const ids = async (filter: object) => {
      const res = await list({ prefix: 'filter-', filter: JSON.stringify(filter) });
      expect(res.statusCode, res.body).toBe(200);
      return res.json<Page>().users.map((u) => u.project_user_id);
    };
    expect(await ids({ property: 'plan', op: 'eq', value: 'pro' })).toEqual(['filter-a', 'filter-c']);
    expect(await ids({ property: 'score', op: 'gte', value: 50 })).toEqual(['filter-b', 'filter-c']);
    expect(
      await ids({
        all: [
          { property: 'plan', op: 'eq', value: 'pro' },
          { event: 'purchase', op: 'not_performed' },
        ],
      }),
    ).toEqual(['filter-a']);
    expect(await ids({ not: { property: 'plan', op: 'exists' } })).toEqual([]);
  });

  it.each([
    ['not JSON', { filter: '{nope' }, /filter/],
    ['an unknown op', { filter: JSON.stringify({ property: 'plan', op: 'eqq', value: 1 }) }, /unknown op/],
    [
      'a trigger reference',
      { filter: JSON.stringify({ property: 'trigger.x', op: 'exists' }) },
      /^filter.property: .*trigger/,
    ],
    ['a bad cursor', { cursor: 'not-a-cursor' }, /cursor/],
    ['a campaign cursor', { cursor: Buffer.from('[1,"x"]').toString('base64url') }, /cursor/],
    ['limit 0', { limit: '0' }, /limit/],
    ['limit 1001', { limit: '1001' }, /limit/],
    ['a non-numeric limit', { limit: 'ten' }, /limit/],
  ])('a list with %s is a 400 naming the problem', async (_name, query, message) => {
    expectJsonError(await list(query), 400, message);
  });
});
