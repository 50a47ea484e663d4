import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { manualClock } from '../helpers/clock.js';
import { TEST_SECRET_KEY } from '../push/push-helpers.js';
import { createUser } from '../campaigns/campaign-helpers.js';
import { call, createTopic } from './preference-helpers.js';

const DAY = 86_400_000;
const SETTING = '/api/v1/settings/preference-page';

describe.each(TEST_DIALECTS)('customer-hosted preference page on %s', (dialect) => {
  const clock = manualClock();
  const ctx = useTestContext(dialect, {
    env: { HERALD_SECRET_KEY: TEST_SECRET_KEY, PUBLIC_URL: 'https://herald.example.com' },
    overrides: { clock },
  });

  async function world(tag: string) {
    const p = await ctx().newProject(tag);
    await createTopic(ctx(), { key: 'promotions', name: 'Deals', description: 'Weekly' }, p.secret);
    for (const user of ['ada', 'bob']) await createUser(ctx(), user, {}, p.secret);
    return p;
  }
  const link = async (secret: Record<string, string>, user: string, body?: unknown) => {
    const res = await call(ctx(), 'POST', `/api/v1/users/${user}/preferences:link`, body, secret);
    expect(res.statusCode, res.body).toBe(200);
    return new URL(res.json<{ url: string }>().url);
  };
  const me = (method: 'GET' | 'PUT', token: string, payload?: unknown) =>
    ctx().inject({
      method,
      url: '/api/v1/me/preferences',
      headers: {
        authorization: `Bearer ${token}`,
        ...(payload !== undefined && { 'content-type': 'application/json' }),
      },
      ...(payload !== undefined && { payload: JSON.stringify(payload) }),
    });

  it('set, read and unset the page; links then point at it with the token, or back at Herald’s page', async () => {
    const { secret } = await world('customer-page');
    expect((await call(ctx(), 'GET', SETTING, undefined, secret)).json()).toEqual({ url: null });
    const set = await call(ctx(), 'PUT', SETTING, { url: 'https://app.example.com/account/prefs?lang=en' }, secret);
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toEqual({ url: 'https://app.example.com/account/prefs?lang=en' });
    expect((await call(ctx(), 'GET', SETTING, undefined, secret)).json()).toEqual(set.json());

    const url = await link(secret, 'ada');
    expect(`${url.origin}${url.pathname}`).toBe('https://app.example.com/account/prefs');
    expect(url.searchParams.get('lang')).toBe('en');
    expect(url.searchParams.get('token')).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);

    const unset = await call(ctx(), 'PUT', SETTING, { url: null }, secret);
    expect(unset.json()).toEqual({ url: null });
    expect((await link(secret, 'ada')).origin).toBe('https://herald.example.com');
  });

  it('refuses a URL that is not a sane absolute https one, with a 400 naming why', async () => {
    const { secret } = await world('customer-page-bad');
    const bad: [unknown, RegExp][] = [
      ['http://app.example.com/prefs', /https/],
      ['https://user:pw@app.example.com/prefs', /credentials/],
      ['https://localhost/prefs', /loopback/],
      ['https://10.0.0.5/prefs', /10\.0\.0\.5/],
      ['/relative/prefs', /absolute/],
      ['https://app.example.com/prefs?token=mine', /token/],
      [`https://app.example.com/${'x'.repeat(2100)}`, /2048/],
      [42, /https URL/],
    ];
    for (const [url, message] of bad) {
      const res = await call(ctx(), 'PUT', SETTING, { url }, secret);
      expect(res.statusCode, String(url)).toBe(400);
      expect(res.json<{ error: string }>().error).toMatch(message);
    }
    expect((await call(ctx(), 'GET', SETTING, undefined, secret)).json()).toEqual({ url: null });
    expect((await call(ctx(), 'PUT', SETTING, {}, { 'content-type': 'application/json' })).statusCode).toBe(401);
  });

  it('the page reads and writes with the token; expired, tampered and other tokens are refused', async () => {
    const a = await world('customer-page-api');
    const b = await world('customer-page-api-other');
    await call(ctx(), 'PUT', SETTING, { url: 'https://app.example.com/prefs' }, a.secret);
    const token = (await link(a.secret, 'ada')).searchParams.get('token')!;

    const read = await me('GET', token);
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json()).toEqual({
      project_user_id: 'ada',
      campaign_pushes: 'subscribed',
      topics: { promotions: 'subscribed' },
      updated_at: null,
      topic_list: [{ key: 'promotions', name: 'Deals', description: 'Weekly' }],
    });
    const written = await me('PUT', token, { topics: { promotions: 'unsubscribed' } });
    expect(written.statusCode, written.body).toBe(200);
    expect(written.json()).toMatchObject({ topics: { promotions: 'unsubscribed' } });
    const viaKey = await call(ctx(), 'GET', '/api/v1/users/ada/preferences', undefined, a.secret);
    expect(viaKey.json()).toMatchObject({ topics: { promotions: 'unsubscribed' } });
    expect((await me('PUT', token, { topics: { nope: 'subscribed' } })).statusCode).toBe(400);
    expect((await me('PUT', token, { colour: 'red' })).statusCode).toBe(400);

    // Tampered: Bob's name in Ada's signed token.
    const [head, payload, signature] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const forged = `${head}.${Buffer.from(JSON.stringify({ ...claims, sub: 'bob' })).toString('base64url')}.${signature}`;
    // Another project's token for its own Ada verifies only in that project: it never opens project A.
    const otherToken = (await link(b.secret, 'ada')).searchParams.get('token')!;
    const otherClaims = JSON.parse(Buffer.from(otherToken.split('.')[1]!, 'base64url').toString()) as {
      pid: string;
    };
    expect(otherClaims.pid).toBe(b.project.project_id);
    const moved = `${head}.${Buffer.from(JSON.stringify({ ...claims, pid: b.project.project_id })).toString('base64url')}.${signature}`;
    for (const bad of [forged, moved, 'not-a-token', '']) {
      const res = await me('GET', bad);
      expect(res.statusCode, bad).toBe(401);
      expect(res.json<{ error: string }>().error).toMatch(/preference link token/);
      expect((await me('PUT', bad, { campaign_pushes: 'unsubscribed' })).statusCode).toBe(401);
    }
    expect((await ctx().inject({ method: 'GET', url: '/api/v1/me/preferences' })).statusCode).toBe(401);
    expect((await call(ctx(), 'GET', '/api/v1/users/bob/preferences', undefined, a.secret)).json()).toMatchObject({
      campaign_pushes: 'subscribed',
    });

    const short = (await link(a.secret, 'ada', { expires_in: 60 })).searchParams.get('token')!;
    clock.advance(61_000);
    const expired = await me('GET', short);
    expect(expired.statusCode).toBe(401);
    expect(expired.json<{ error: string }>().error).toMatch(/expired/);
    clock.advance(8 * DAY);
    expect((await me('GET', token)).statusCode).toBe(401);
  });

  it('answers CORS preflights for the page’s API (the token is no ambient credential)', async () => {
    const res = await ctx().inject({
      method: 'OPTIONS',
      url: '/api/v1/me/preferences',
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'PUT',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(String(res.headers['access-control-allow-headers'])).toMatch(/Authorization/);
  });
});
