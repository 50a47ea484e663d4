import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { call, createTopic } from '../preferences/preference-helpers.js';

interface ImportAnswer {
  results: { line: number; project_user_id: string | null; status: string; error?: string }[];
  created: number;
  updated: number;
  failed: number;
}

describe.each(TEST_DIALECTS)('POST /api/v1/users:import with preferences on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  async function world(tag: string) {
    const p = await ctx().newProject(tag);
    await createTopic(ctx(), { key: 'promotions', name: 'Deals' }, p.secret);
    await createTopic(ctx(), { key: 'news', name: 'News', default_subscribed: false }, p.secret);
    return p;
  }
  const importNdjson = (secret: Record<string, string>, items: unknown[]) =>
    ctx().inject({
      method: 'POST',
      url: '/api/v1/users:import',
      headers: { ...secret, 'content-type': 'application/x-ndjson' },
      payload: items.map((i) => JSON.stringify(i)).join('\n'),
    });
  const prefs = async (secret: Record<string, string>, user: string) => {
    const res = await call(ctx(), 'GET', `/api/v1/users/${user}/preferences`, undefined, secret);
    return res.statusCode === 200 ? res.json<Record<string, unknown>>() : res.statusCode;
  };

  it('writes the preferences a line carries; a bad one fails its line alone (4xx-like error, nothing written)', async () => {
    const { secret } = await world('import-prefs');
    const res = await importNdjson(secret, [
      { project_user_id: 'p-1', preferences: { campaign_pushes: 'unsubscribed', topics: { news: 'subscribed' } } },
      { project_user_id: 'p-2', properties: { a: 1 }, preferences: { topics: { nope: 'subscribed' } } },
      { project_user_id: 'p-3', preferences: { topics: { news: 'maybe' } } },
      { project_user_id: 'p-4', preferences: 'all' },
      { project_user_id: 'p-5', preferences: { project_user_id: 'someone-else', topics: {} } },
      { project_user_id: 'p-6', preferences: { topics: { promotions: 'unsubscribed' }, colour: 'red' } },
      { project_user_id: 'p-7', properties: { plain: true } },
    ]);
    expect(res.statusCode, res.body).toBe(200);
    const answer = res.json<ImportAnswer>();
    expect(answer).toMatchObject({ created: 2, updated: 0, failed: 5 });
    expect(answer.results.map((r) => [r.project_user_id, r.status, r.error])).toEqual([
      ['p-1', 'created', undefined],
      ['p-2', 'error', 'preferences.topics: the project has no topic "nope"'],
      ['p-3', 'error', 'preferences: topics.news must be subscribed or unsubscribed'],
      ['p-4', 'error', 'preferences: must be an object { campaign_pushes, topics }'],
      ['p-5', 'error', "preferences: project_user_id is not the line's project_user_id"],
      ['p-6', 'error', 'preferences: unknown field "colour"'],
      ['p-7', 'created', undefined],
    ]);
    expect(await prefs(secret, 'p-1')).toMatchObject({
      campaign_pushes: 'unsubscribed',
      topics: { promotions: 'subscribed', news: 'subscribed' },
    });
    for (const failed of ['p-2', 'p-3', 'p-4', 'p-5', 'p-6']) expect(await prefs(secret, failed)).toBe(404);
    expect(await prefs(secret, 'p-7')).toMatchObject({ campaign_pushes: 'subscribed', updated_at: null });
  });

  it('merges into an existing user, keeps the given updated_at, and importing again changes nothing', async () => {
    const { secret } = await world('import-prefs-merge');
    expect((await call(ctx(), 'POST', '/api/v1/users', { project_user_id: 'm-1' }, secret)).statusCode).toBe(200);
    await call(ctx(), 'PUT', '/api/v1/users/m-1/preferences', { campaign_pushes: 'unsubscribed' }, secret);
    const line = {
      project_user_id: 'm-1',
      preferences: { topics: { promotions: 'unsubscribed' }, updated_at: '2025-03-01T10:00:00.000Z' },
    };
    const first = await importNdjson(secret, [line, { project_user_id: 'never', preferences: { updated_at: null } }]);
    expect(first.json<ImportAnswer>()).toMatchObject({ created: 1, updated: 1, failed: 0 });
    const after = await prefs(secret, 'm-1');
    expect(after).toEqual({
      project_user_id: 'm-1',
      campaign_pushes: 'unsubscribed',
      topics: { promotions: 'unsubscribed', news: 'unsubscribed' },
      updated_at: '2025-03-01T10:00:00.000Z',
    });
    // `updated_at: null` (a user who never chose, as an export says it) writes no choice.
    expect(await prefs(secret, 'never')).toMatchObject({ updated_at: null });
    const second = await importNdjson(secret, [
      { ...line, preferences: { ...line.preferences, updated_at: undefined } },
    ]);
    expect(second.json<ImportAnswer>()).toMatchObject({ updated: 1, failed: 0 });
    expect(await prefs(secret, 'm-1')).toEqual(after);
  });

  it('a JSON array body takes preferences too, and an unknown topic is never a 5xx', async () => {
    const { secret } = await world('import-prefs-json');
    const res = await ctx().inject({
      method: 'POST',
      url: '/api/v1/users:import',
      headers: secret,
      payload: [
        { project_user_id: 'j-1', preferences: { topics: { promotions: 'unsubscribed' } } },
        { project_user_id: 'j-2', preferences: { topics: { ['x'.repeat(200)]: 'subscribed' } } },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<ImportAnswer>()).toMatchObject({ created: 1, failed: 1 });
    expect(await prefs(secret, 'j-1')).toMatchObject({ topics: { promotions: 'unsubscribed' } });
  });
});
