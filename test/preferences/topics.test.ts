import { describe, expect, it } from 'vitest';
import { TOPICS_PER_PROJECT } from '../../src/preferences/topics.schemas.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createCampaign } from '../campaigns/campaign-helpers.js';
import { call, createTopic } from './preference-helpers.js';

describe.each(TEST_DIALECTS)('subscription topics on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  it('creates, lists, reads, changes and deletes a topic', async () => {
    const { secret } = await ctx().newProject('topics-crud');
    const created = await call(
      ctx(),
      'POST',
      '/api/v1/topics',
      { key: 'promotions', name: 'Promotions', description: 'Sales' },
      secret,
    );
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({
      key: 'promotions',
      name: 'Promotions',
      description: 'Sales',
      default_subscribed: true,
    });
    await createTopic(ctx(), { key: 'news', default_subscribed: false }, secret);
    const list = await call(ctx(), 'GET', '/api/v1/topics', undefined, secret);
    expect(list.json<{ topics: Array<{ key: string }> }>().topics.map((t) => t.key)).toEqual(['news', 'promotions']);
    const patched = await call(
      ctx(),
      'PATCH',
      '/api/v1/topics/news',
      { default_subscribed: true, name: 'News' },
      secret,
    );
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ key: 'news', name: 'News', default_subscribed: true });
    expect((await call(ctx(), 'GET', '/api/v1/topics/news', undefined, secret)).json()).toMatchObject({ name: 'News' });
    expect((await call(ctx(), 'DELETE', '/api/v1/topics/news', undefined, secret)).statusCode).toBe(200);
    const gone = await call(ctx(), 'GET', '/api/v1/topics/news', undefined, secret);
    expect(gone.statusCode).toBe(404);
    expect(gone.json().error).toMatch(/news does not exist/);
  });

  it('refuses bad keys, duplicates, unknown fields and the public key', async () => {
    const { secret, public: pub } = await ctx().newProject('topics-bad');
    for (const key of ['', 'Has Caps', '-lead', 'a'.repeat(65), 'sp ace', 'dot.ted'] as const) {
      const res = await call(ctx(), 'POST', '/api/v1/topics', { key, name: 'x' }, secret);
      expect(res.statusCode, key).toBe(400);
      expect(res.json().error).toMatch(/key/);
    }
    expect((await call(ctx(), 'POST', '/api/v1/topics', { key: 'k', name: 'x', extra: 1 }, secret)).statusCode).toBe(
      400,
    );
    expect((await call(ctx(), 'POST', '/api/v1/topics', { key: 'k', name: '' }, secret)).statusCode).toBe(400);
    await createTopic(ctx(), { key: 'dup' }, secret);
    const dup = await call(ctx(), 'POST', '/api/v1/topics', { key: 'dup', name: 'again' }, secret);
    expect(dup.statusCode).toBe(409);
    expect(dup.json().error).toMatch(/already exists/);
    expect((await call(ctx(), 'GET', '/api/v1/topics', undefined, pub)).statusCode).toBe(401);
    expect((await call(ctx(), 'PATCH', '/api/v1/topics/missing', { name: 'x' }, secret)).statusCode).toBe(404);
    expect((await call(ctx(), 'DELETE', '/api/v1/topics/missing', undefined, secret)).statusCode).toBe(404);
  });

  it('keeps topics to their project', async () => {
    const a = await ctx().newProject('topics-a');
    const b = await ctx().newProject('topics-b');
    await createTopic(ctx(), { key: 'mine' }, a.secret);
    expect((await call(ctx(), 'GET', '/api/v1/topics/mine', undefined, b.secret)).statusCode).toBe(404);
    // The same key in another project is another topic.
    await createTopic(ctx(), { key: 'mine' }, b.secret);
    expect((await call(ctx(), 'GET', '/api/v1/topics', undefined, a.secret)).json().topics).toHaveLength(1);
  });

  it(`holds at most ${TOPICS_PER_PROJECT} topics per project`, async () => {
    const { secret } = await ctx().newProject('topics-limit');
    for (let i = 0; i < TOPICS_PER_PROJECT; i++) await createTopic(ctx(), { key: `t${i}` }, secret);
    const res = await call(ctx(), 'POST', '/api/v1/topics', { key: 'one-more', name: 'x' }, secret);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/at most 100 topics/);
  });

  it('lets a campaign name one known topic, and refuses to delete a topic in use', async () => {
    const { secret } = await ctx().newProject('topics-campaigns');
    await createTopic(ctx(), { key: 'promotions' }, secret);
    const unknown = await call(
      ctx(),
      'POST',
      '/api/v1/campaigns',
      { name: 'x', message: { title: 'x' }, topic: 'nope' },
      secret,
    );
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error).toBe('topic: the project has no topic "nope"');
    expect(
      (await call(ctx(), 'POST', '/api/v1/campaigns', { name: 'x', message: { title: 'x' }, topic: 7 }, secret))
        .statusCode,
    ).toBe(400);
    const campaignId = await createCampaign(ctx(), { topic: 'promotions' }, secret);
    const got = await call(ctx(), 'GET', `/api/v1/campaigns/${campaignId}`, undefined, secret);
    expect(got.json().topic).toBe('promotions');
    const inUse = await call(ctx(), 'DELETE', '/api/v1/topics/promotions', undefined, secret);
    expect(inUse.statusCode).toBe(409);
    expect(inUse.json().error).toContain(campaignId);
    const badPatch = await call(ctx(), 'PATCH', `/api/v1/campaigns/${campaignId}`, { topic: 'other' }, secret);
    expect(badPatch.statusCode).toBe(400);
    expect(badPatch.json().error).toMatch(/no topic "other"/);
    const cleared = await call(ctx(), 'PATCH', `/api/v1/campaigns/${campaignId}`, { topic: null }, secret);
    expect(cleared.json().topic).toBeNull();
    expect((await call(ctx(), 'DELETE', '/api/v1/topics/promotions', undefined, secret)).statusCode).toBe(200);
    // A campaign without a topic says so.
    const plain = await createCampaign(ctx(), {}, secret);
    expect((await call(ctx(), 'GET', `/api/v1/campaigns/${plain}`, undefined, secret)).json().topic).toBeNull();
  });
});
