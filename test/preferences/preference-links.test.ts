import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { manualClock } from '../helpers/clock.js';
import { TEST_SECRET_KEY } from '../push/push-helpers.js';
import { createUser } from '../campaigns/campaign-helpers.js';
import { call, createTopic, putPreferences } from './preference-helpers.js';

const DAY = 86_400_000;

describe.each(TEST_DIALECTS)('signed preference links on %s', (dialect) => {
  const clock = manualClock();
  const ctx = useTestContext(dialect, {
    env: { HERALD_SECRET_KEY: TEST_SECRET_KEY, PUBLIC_URL: 'https://herald.example.com' },
    overrides: { clock },
  });

  async function world(tag: string) {
    const p = await ctx().newProject(tag);
    await createTopic(
      ctx(),
      { key: 'promotions', name: 'Deals <script>alert(1)</script>', description: 'Tom & "Jerry"' },
      p.secret,
    );
    await createTopic(ctx(), { key: 'news', name: 'News', default_subscribed: false }, p.secret);
    for (const user of ['ada', 'bob']) await createUser(ctx(), user, {}, p.secret);
    return p;
  }

  async function link(secret: Record<string, string>, user: string, body?: unknown) {
    const res = await call(ctx(), 'POST', `/api/v1/users/${user}/preferences:link`, body, secret);
    expect(res.statusCode, res.body).toBe(200);
    const { url, expires_at } = res.json<{ url: string; expires_at: string }>();
    const parsed = new URL(url);
    return {
      url,
      expiresAt: expires_at,
      path: parsed.pathname,
      token: parsed.searchParams.get('token')!,
      local: `${parsed.pathname}${parsed.search}`,
    };
  }

  const page = (url: string) => ctx().inject({ method: 'GET', url });
  const submit = (url: string, form: string) =>
    ctx().inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form,
    });

  it('makes a link that shows the choices, escaped, and saves the form', async () => {
    const { project, secret } = await world('links-page');
    const made = await link(secret, 'ada');
    expect(made.url.startsWith(`https://herald.example.com/preferences/${project.project_id}/ada?token=`)).toBe(true);
    expect(Date.parse(made.expiresAt) - clock.now()).toBeGreaterThan(7 * DAY - 2000);
    expect(Date.parse(made.expiresAt) - clock.now()).toBeLessThanOrEqual(7 * DAY);
    const shown = await page(made.local);
    expect(shown.statusCode).toBe(200);
    expect(shown.headers['content-type']).toMatch(/text\/html/);
    expect(shown.headers['content-security-policy']).toContain("default-src 'none'");
    expect(shown.headers['referrer-policy']).toBe('no-referrer');
    expect(shown.body).toContain('Deals &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(shown.body).toContain('Tom &amp; &quot;Jerry&quot;');
    expect(shown.body).not.toContain('<script>');
    expect(shown.body).toMatch(/name="topic\.promotions" value="subscribed" checked/);
    expect(shown.body).not.toMatch(/name="topic\.news" value="subscribed" checked/);

    const saved = await submit(
      made.local,
      'campaign_pushes=unsubscribed&campaign_pushes=subscribed&topic.promotions=unsubscribed&topic.news=unsubscribed&topic.news=subscribed',
    );
    expect(saved.statusCode).toBe(200);
    expect(saved.body).toContain('Your preferences are saved.');
    const now = await call(ctx(), 'GET', '/api/v1/users/ada/preferences', undefined, secret);
    expect(now.json()).toMatchObject({
      campaign_pushes: 'subscribed',
      topics: { promotions: 'unsubscribed', news: 'subscribed' },
    });
    // Unticking the global box opts out of campaign pushes.
    await submit(made.local, 'campaign_pushes=unsubscribed');
    expect((await call(ctx(), 'GET', '/api/v1/users/ada/preferences', undefined, secret)).json().campaign_pushes).toBe(
      'unsubscribed',
    );
  });

  it('refuses an expired, a tampered, and another user’s or project’s token', async () => {
    const a = await world('links-refuse-a');
    const b = await world('links-refuse-b');
    const short = await link(a.secret, 'ada', { expires_in: 3600 });
    expect((await page(short.local)).statusCode).toBe(200);
    clock.advance(3600_000 + 1000);
    const expired = await page(short.local);
    expect(expired.statusCode).toBe(410);
    expect(expired.body).toContain('This link has expired');
    expect((await submit(short.local, 'campaign_pushes=unsubscribed')).statusCode).toBe(410);

    const made = await link(a.secret, 'ada');
    const [head, payload, signature] = made.token.split('.') as [string, string, string];
    const forged = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    forged.sub = 'bob';
    const tampered = `${head}.${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${signature}`;
    for (const url of [
      `/preferences/${a.project.project_id}/bob?token=${tampered}`,
      `${made.path}?token=${made.token.slice(0, -2)}xx`,
      `${made.path}?token=not-a-token`,
      made.path,
      // Ada's token replayed on Bob's page, and on another project's Ada.
      `/preferences/${a.project.project_id}/bob?token=${made.token}`,
      `/preferences/${b.project.project_id}/ada?token=${made.token}`,
      `/preferences/no-such-project/ada?token=${made.token}`,
    ]) {
      const res = await page(url);
      expect(res.statusCode, url).toBe(403);
      expect(res.body).toContain('This link is not valid');
      expect((await submit(url, 'campaign_pushes=unsubscribed')).statusCode, url).toBe(403);
    }
    for (const [project, user] of [
      [a, 'bob'],
      [b, 'ada'],
    ] as const)
      expect(
        (await call(ctx(), 'GET', `/api/v1/users/${user}/preferences`, undefined, project.secret)).json().updated_at,
      ).toBeNull();
  });

  it('refuses bad lifetimes, unknown users and the public key', async () => {
    const { secret, public: pub } = await world('links-bad');
    for (const expires_in of [59, 30 * 86_400 + 1, 1.5, '3600']) {
      const res = await call(ctx(), 'POST', '/api/v1/users/ada/preferences:link', { expires_in }, secret);
      expect(res.statusCode, String(expires_in)).toBe(400);
      expect(res.json().error).toMatch(/expires_in/);
    }
    const longest = await link(secret, 'ada', { expires_in: 30 * 86_400 });
    expect(Date.parse(longest.expiresAt) - clock.now()).toBeLessThanOrEqual(30 * DAY);
    const ghost = await call(ctx(), 'POST', '/api/v1/users/ghost/preferences:link', {}, secret);
    expect(ghost.statusCode).toBe(404);
    expect((await call(ctx(), 'POST', '/api/v1/users/ada/preferences:link', {}, pub)).statusCode).toBe(401);
    // A link of a user deleted since opens nothing.
    const made = await link(secret, 'bob');
    await putPreferences(ctx(), 'bob', { campaign_pushes: 'subscribed' }, secret);
    expect((await call(ctx(), 'DELETE', '/api/v1/users/bob', undefined, secret)).statusCode).toBeLessThan(300);
    expect((await page(made.local)).statusCode).toBe(403);
  });
});
