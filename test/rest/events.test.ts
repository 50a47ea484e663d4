import { describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';

interface Tracked {
  event_id: string;
  project_user_id: string;
  name: string;
  timestamp: string;
}
interface Listed {
  event_id: string;
  name: string;
  properties: Record<string, unknown>;
  timestamp: string;
}

function expectJson400(res: LightMyRequestResponse): void {
  expect(res.statusCode, res.body).toBe(400);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.json()).toEqual({ error: expect.any(String) });
}

describe.each(TEST_DIALECTS)('events (rule `events`) on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  const track = (body: unknown, headers = ctx().public) =>
    ctx().inject({ method: 'POST', url: '/api/v1/events', headers, payload: body as object });
  const listed = async (projectUserId: string, query = '') => {
    const res = await ctx().inject({
      method: 'GET',
      url: `/api/v1/users/${encodeURIComponent(projectUserId)}/events${query}`,
      headers: ctx().secret,
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ events: Listed[] }>().events;
  };
  const storedCount = async (projectUserId: string) => {
    const rows = await ctx()
      .database.db.selectFrom('events')
      .innerJoin('users', 'users.id', 'events.user_id')
      .select('events.id')
      .where('users.project_id', '=', ctx().project.project_id)
      .where('users.project_user_id', '=', projectUserId)
      .execute();
    return rows.length;
  };

  it('tracks one event with properties and an ISO timestamp, creating the user', async () => {
    const res = await track({
      project_user_id: 'single',
      name: 'purchase',
      properties: { sku: 'A1', price: 9.99, gift: false, note: null },
      timestamp: '2024-05-06T07:08:09.123Z',
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<Tracked>();
    expect(body).toEqual({
      event_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      project_user_id: 'single',
      name: 'purchase',
      timestamp: '2024-05-06T07:08:09.123Z',
    });
    const [stored] = await listed('single');
    expect(stored).toEqual({
      event_id: body.event_id,
      name: 'purchase',
      properties: { sku: 'A1', price: 9.99, gift: false, note: null },
      timestamp: '2024-05-06T07:08:09.123Z',
    });
    expect(
      (
        await ctx().inject({
          method: 'POST',
          url: '/api/v1/users',
          headers: ctx().secret,
          payload: { project_user_id: 'single' },
        })
      ).json(),
    ).toEqual({ properties: {} });
  });

  it('accepts epoch milliseconds and an offset, and defaults to now', async () => {
    const ms = Date.UTC(2023, 0, 2, 3, 4, 5, 6);
    expect((await track({ project_user_id: 'times', name: 'ms', timestamp: ms })).json<Tracked>().timestamp).toBe(
      '2023-01-02T03:04:05.006Z',
    );
    expect(
      (
        await track({ project_user_id: 'times', name: 'offset', timestamp: '2023-01-02T05:04:05+02:00' })
      ).json<Tracked>().timestamp,
    ).toBe('2023-01-02T03:04:05.000Z');
    const before = Date.now();
    const now = Date.parse((await track({ project_user_id: 'times', name: 'now' })).json<Tracked>().timestamp);
    expect(now).toBeGreaterThanOrEqual(before - 1000);
    expect(now).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it.each([
    ['a date that does not exist', '2024-02-30T00:00:00Z'],
    ['an hour 25', '2024-01-01T25:00:00Z'],
    ['free text', 'yesterday'],
    ['a US date', '01/02/2024'],
    ['epoch seconds', 1_700_000_000],
    ['before 2000', '1999-12-31T23:59:59Z'],
    ['more than a day ahead', new Date(Date.now() + 3 * 86_400_000).toISOString()],
    ['a negative number', -1],
    ['a boolean', true],
    ['an empty string', ''],
  ])('refuses %s as timestamp', async (label, timestamp) => {
    expectJson400(await track({ project_user_id: `bad-time ${label}`, name: 'x', timestamp }));
    expect(await storedCount(`bad-time ${label}`)).toBe(0);
  });

  it('tracks a batch of 500 in order and returns every id', async () => {
    const events = Array.from({ length: 500 }, (_, i) => ({
      project_user_id: `batch-${i % 5}`,
      name: `step-${i}`,
      timestamp: Date.UTC(2024, 0, 1) + i,
    }));
    const res = await track({ events }, ctx().secret);
    expect(res.statusCode).toBe(200);
    const tracked = res.json<{ events: Tracked[] }>().events;
    expect(tracked).toHaveLength(500);
    expect(new Set(tracked.map((e) => e.event_id)).size).toBe(500);
    expect(tracked.map((e) => e.name)).toEqual(events.map((e) => e.name));
    expect(await storedCount('batch-0')).toBe(100);
    expect((await listed('batch-4', '?limit=3')).map((e) => e.name)).toEqual(['step-499', 'step-494', 'step-489']);
  });

  it('refuses a batch of 501 or an empty batch, storing nothing', async () => {
    const events = Array.from({ length: 501 }, (_, i) => ({ project_user_id: 'too-many', name: `e${i}` }));
    expectJson400(await track({ events }));
    expectJson400(await track({ events: [] }));
    expect(await storedCount('too-many')).toBe(0);
  });

  it('a batch with one bad event stores none of it', async () => {
    expectJson400(
      await track({
        events: [
          { project_user_id: 'atomic', name: 'ok' },
          { project_user_id: 'atomic', name: 'bad', timestamp: 'never' },
        ],
      }),
    );
    expectJson400(
      await track({
        events: [
          { project_user_id: 'atomic', name: 'ok' },
          { project_user_id: 'atomic', name: 'bad', properties: { deep: { x: 1 } } },
        ],
      }),
    );
    expect(await storedCount('atomic')).toBe(0);
  });

  it.each([
    ['no name', { project_user_id: 'v' }],
    ['an empty name', { project_user_id: 'v', name: '' }],
    ['a name with a newline', { project_user_id: 'v', name: 'a\nb' }],
    ['no user', { name: 'x' }],
    ['an invalid user id', { project_user_id: 'a\u0000', name: 'x' }],
    ['nested properties', { project_user_id: 'v', name: 'x', properties: { a: [1] } }],
    ['a NUL in a property value', { project_user_id: 'v', name: 'x', properties: { a: '\u0000' } }],
    ['a lone surrogate in the name', { project_user_id: 'v', name: '\ud800' }],
    ['an unknown field', { project_user_id: 'v', name: 'x', extra: 1 }],
    ['an array body', [{ project_user_id: 'v', name: 'x' }]],
  ])('refuses %s with a JSON 400', async (_label, body) => {
    expectJson400(await track(body));
  });

  it('lists events newest first and 404s for an unknown user', async () => {
    await track({
      events: [
        { project_user_id: 'order', name: 'old', timestamp: '2024-01-01T00:00:00Z' },
        { project_user_id: 'order', name: 'new', timestamp: '2024-06-01T00:00:00Z' },
      ],
    });
    expect((await listed('order')).map((e) => e.name)).toEqual(['new', 'old']);
    expect(
      (await ctx().inject({ method: 'GET', url: '/api/v1/users/unknown/events', headers: ctx().secret })).statusCode,
    ).toBe(404);
    expectJson400(
      await ctx().inject({ method: 'GET', url: '/api/v1/users/order/events?limit=0', headers: ctx().secret }),
    );
  });
});
