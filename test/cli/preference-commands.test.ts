import { describe, expect, it } from 'vitest';
import { json } from '../campaigns/campaign-helpers.js';
import { runCli } from '../helpers/processes.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

describe.each(TEST_DIALECTS)('herald topics and preferences on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const env = () => ctx().database.env;
  const project = () => ctx().project.project_id;

  it('creates, lists and deletes topics; refuses bad input with a message', async () => {
    const made = await runCli(
      ['topics', 'create', '--project', project(), '--key', 'deals', '--name', 'Deals', '--json'],
      env(),
    );
    expect(made.code, made.stderr).toBe(0);
    expect(JSON.parse(made.stdout)).toMatchObject({ key: 'deals', name: 'Deals', default_subscribed: true });
    const optIn = await runCli(
      ['topics', 'create', '--project', project(), '--key', 'digest', '--name', 'Digest', '--default-unsubscribed'],
      env(),
    );
    expect(optIn.code, optIn.stderr).toBe(0);
    const listed = await runCli(['topics', 'list', '--project', project(), '--json'], env());
    expect(
      JSON.parse(listed.stdout).topics.map((t: { key: string; default_subscribed: boolean }) => [
        t.key,
        t.default_subscribed,
      ]),
    ).toEqual([
      ['deals', true],
      ['digest', false],
    ]);
    const bad = await runCli(['topics', 'create', '--project', project(), '--key', 'Bad Key', '--name', 'x'], env());
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/key/);
    expect((await runCli(['topics', 'create', '--project', project(), '--name', 'x'], env())).code).toBe(2);
    const deleted = await runCli(['topics', 'delete', '--project', project(), '--key', 'digest'], env());
    expect(deleted.code, deleted.stderr).toBe(0);
    const missing = await runCli(['topics', 'delete', '--project', project(), '--key', 'digest'], env());
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/does not exist/);
  });

  it("gets and sets a user's preferences", async () => {
    expect((await json(ctx(), 'POST', '/api/v1/topics', { key: 'news', name: 'News' })).statusCode).toBe(201);
    expect(
      (await json(ctx(), 'POST', '/api/v1/users', { project_user_id: 'cli-pref', properties: {} })).statusCode,
    ).toBe(200);
    const set = await runCli(
      [
        'preferences',
        'set',
        '--project',
        project(),
        '--user',
        'cli-pref',
        '--campaign-pushes',
        'unsubscribed',
        '--unsubscribe',
        'news',
      ],
      env(),
    );
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ campaign_pushes: 'unsubscribed', topics: { news: 'unsubscribed' } });
    const got = await runCli(['preferences', 'get', '--project', project(), '--user', 'cli-pref'], env());
    expect(JSON.parse(got.stdout)).toMatchObject({ project_user_id: 'cli-pref', campaign_pushes: 'unsubscribed' });
    const http = await json(ctx(), 'GET', '/api/v1/users/cli-pref/preferences');
    expect(http.json().topics.news).toBe('unsubscribed');
    const badState = await runCli(
      ['preferences', 'set', '--project', project(), '--user', 'cli-pref', '--campaign-pushes', 'maybe'],
      env(),
    );
    expect(badState.code).toBe(2);
    expect(badState.stderr).toMatch(/--campaign-pushes must be/);
    const unknown = await runCli(
      ['preferences', 'set', '--project', project(), '--user', 'cli-pref', '--subscribe', 'nope'],
      env(),
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no topic "nope"/);
    const both = await runCli(
      [
        'preferences',
        'set',
        '--project',
        project(),
        '--user',
        'cli-pref',
        '--subscribe',
        'news',
        '--unsubscribe',
        'news',
      ],
      env(),
    );
    expect(both.code).toBe(2);
  });

  it('shows and sets where preference links point; refuses a URL the outbound-URL policy would', async () => {
    const page = (...flags: string[]) => runCli(['preferences', 'page', '--project', project(), ...flags], env());
    const initial = await page();
    expect(initial.code, initial.stderr).toBe(0);
    expect(JSON.parse(initial.stdout)).toEqual({ url: null });
    const set = await page('--url', 'https://app.example.com/account/notifications');
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toEqual({ url: 'https://app.example.com/account/notifications' });
    expect(JSON.parse((await page()).stdout)).toEqual({ url: 'https://app.example.com/account/notifications' });
    for (const refused of ['http://app.example.com/prefs', 'https://127.0.0.1/prefs', 'https://a.example/?token=x']) {
      const res = await page('--url', refused);
      expect(res.code, refused).toBe(1);
      expect(res.stderr, refused).not.toBe('');
    }
    expect((await page('--url', 'https://a.example/', '--herald')).code).toBe(2);
    const back = await page('--herald');
    expect(back.code, back.stderr).toBe(0);
    expect(JSON.parse(back.stdout)).toEqual({ url: null });
  });
});
