import { describe, expect, it } from 'vitest';
import { userTokenFor } from '../../src/identity/identity.service.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createUser } from '../campaigns/campaign-helpers.js';
import { createWebhook, webhookJobs } from '../webhooks/webhook-helpers.js';
import { TEST_SECRET_KEY } from '../push/push-helpers.js';
import { call, createTopic, putPreferences } from './preference-helpers.js';

describe.each(TEST_DIALECTS)('user preferences on %s', (dialect) => {
  const ctx = useTestContext(dialect, {
    env: { HERALD_SECRET_KEY: TEST_SECRET_KEY, OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' },
  });

  async function world(tag: string) {
    const p = await ctx().newProject(tag);
    await createTopic(ctx(), { key: 'promotions', default_subscribed: true }, p.secret);
    await createTopic(ctx(), { key: 'news', default_subscribed: false }, p.secret);
    await createUser(ctx(), 'ada', {}, p.secret);
    await createUser(ctx(), 'bob', {}, p.secret);
    return p;
  }

  it('shows the defaults, merges topics and the global choice, and keeps users apart', async () => {
    const { secret } = await world('prefs-merge');
    const first = await call(ctx(), 'GET', '/api/v1/users/ada/preferences', undefined, secret);
    expect(first.statusCode).toBe(200);
    expect(first.json()).toEqual({
      project_user_id: 'ada',
      campaign_pushes: 'subscribed',
      topics: { news: 'unsubscribed', promotions: 'subscribed' },
      updated_at: null,
    });
    expect(await putPreferences(ctx(), 'ada', { topics: { news: 'subscribed' } }, secret)).toMatchObject({
      campaign_pushes: 'subscribed',
      topics: { news: 'subscribed', promotions: 'subscribed' },
    });
    // Topics not named keep their state; the global choice is independent.
    expect(
      await putPreferences(
        ctx(),
        'ada',
        { campaign_pushes: 'unsubscribed', topics: { promotions: 'unsubscribed' } },
        secret,
      ),
    ).toMatchObject({ campaign_pushes: 'unsubscribed', topics: { news: 'subscribed', promotions: 'unsubscribed' } });
    expect(await putPreferences(ctx(), 'ada', {}, secret)).toMatchObject({ campaign_pushes: 'unsubscribed' });
    const bob = await call(ctx(), 'GET', '/api/v1/users/bob/preferences', undefined, secret);
    expect(bob.json()).toMatchObject({ campaign_pushes: 'subscribed', topics: { news: 'unsubscribed' } });
  });

  it('refuses unknown topics, bad states and unknown users with a message', async () => {
    const { secret } = await world('prefs-bad');
    const unknown = await call(
      ctx(),
      'PUT',
      '/api/v1/users/ada/preferences',
      { topics: { nope: 'subscribed' } },
      secret,
    );
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error).toBe('topics: the project has no topic "nope"');
    for (const body of [{ campaign_pushes: 'maybe' }, { topics: { news: 'yes' } }, { topics: [] }, { other: 1 }]) {
      const res = await call(ctx(), 'PUT', '/api/v1/users/ada/preferences', body, secret);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error).toBeTruthy();
    }
    // Nothing was written by the refused calls.
    expect((await call(ctx(), 'GET', '/api/v1/users/ada/preferences', undefined, secret)).json().updated_at).toBeNull();
    const ghost = await call(
      ctx(),
      'PUT',
      '/api/v1/users/ghost/preferences',
      { campaign_pushes: 'subscribed' },
      secret,
    );
    expect(ghost.statusCode).toBe(404);
    expect(ghost.json().error).toMatch(/ghost does not exist/);
    expect((await call(ctx(), 'GET', '/api/v1/users/ghost/preferences', undefined, secret)).statusCode).toBe(404);
  });

  it('forgets choices about a deleted topic, even when its key comes back', async () => {
    const { secret } = await world('prefs-recreate');
    await putPreferences(ctx(), 'ada', { topics: { news: 'subscribed' } }, secret);
    expect((await call(ctx(), 'DELETE', '/api/v1/topics/news', undefined, secret)).statusCode).toBe(200);
    expect((await call(ctx(), 'GET', '/api/v1/users/ada/preferences', undefined, secret)).json().topics).toEqual({
      promotions: 'subscribed',
    });
    await createTopic(ctx(), { key: 'news', default_subscribed: false }, secret);
    expect((await call(ctx(), 'GET', '/api/v1/users/ada/preferences', undefined, secret)).json().topics).toEqual({
      news: 'unsubscribed',
      promotions: 'subscribed',
    });
  });

  it('lets the public key touch only the verified user’s own preferences', async () => {
    const { secret, public: pub } = await world('prefs-public');
    const off = await call(ctx(), 'PUT', '/api/v1/users/ada/preferences', { campaign_pushes: 'unsubscribed' }, pub);
    expect(off.statusCode).toBe(403);
    expect(off.json().error).toMatch(/identity verification/);
    expect((await call(ctx(), 'GET', '/api/v1/users/ada/preferences', undefined, pub)).statusCode).toBe(403);
    const enabled = await call(ctx(), 'PUT', '/api/v1/identity-verification', undefined, secret);
    const signingKey = enabled.json<{ signing_key: string }>().signing_key;
    const asAda = { ...pub, 'x-service-user-token': userTokenFor(signingKey, 'ada') };
    expect(
      (await call(ctx(), 'PUT', '/api/v1/users/ada/preferences', { campaign_pushes: 'unsubscribed' }, pub)).statusCode,
    ).toBe(401);
    const own = await call(ctx(), 'PUT', '/api/v1/users/ada/preferences', { topics: { news: 'subscribed' } }, asAda);
    expect(own.statusCode).toBe(200);
    expect((await call(ctx(), 'GET', '/api/v1/users/ada/preferences', undefined, asAda)).json().topics.news).toBe(
      'subscribed',
    );
    const other = await call(ctx(), 'PUT', '/api/v1/users/bob/preferences', { campaign_pushes: 'unsubscribed' }, asAda);
    expect(other.statusCode).toBe(401);
    expect((await call(ctx(), 'GET', '/api/v1/users/bob/preferences', undefined, secret)).json().campaign_pushes).toBe(
      'subscribed',
    );
  });

  it('sends a preferences.updated webhook event with the new state', async () => {
    const { project, secret } = await world('prefs-webhook');
    await createWebhook(ctx(), secret, { url: 'http://127.0.0.1:9/hook', events: ['preferences.updated'] });
    const before = (await webhookJobs(ctx().database.db)).length;
    await putPreferences(ctx(), 'ada', { campaign_pushes: 'unsubscribed', topics: { news: 'subscribed' } }, secret);
    const rows = await ctx()
      .database.db.selectFrom('jobs')
      .select('payload')
      .where('kind', '=', 'webhooks.deliver')
      .execute();
    expect(rows.length).toBe(before + 1);
    const payloads = rows.map(
      (r) =>
        (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload) as {
          projectId: string;
          events: Array<{ type: string; body: string }>;
        },
    );
    const mine = payloads.find((p) => p.projectId === project.project_id)!;
    expect(mine.events[0]!.type).toBe('preferences.updated');
    expect(JSON.parse(mine.events[0]!.body).data).toEqual({
      project_id: project.project_id,
      project_user_id: 'ada',
      campaign_pushes: 'unsubscribed',
      topics: { news: 'subscribed', promotions: 'subscribed' },
      source: 'api',
    });
  });
});
