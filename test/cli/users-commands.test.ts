import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { runCli } from '../helpers/processes.js';

const lines = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe.each(TEST_DIALECTS)('herald users import and export on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-users-cli-'));
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
  const env = () => ctx().database.env;
  const project = () => ctx().project.project_id;
  const getUser = (id: string, headers = ctx().secret) =>
    ctx().inject({ method: 'GET', url: `/api/v1/users/${encodeURIComponent(id)}`, headers });

  it('imports an NDJSON file in batches, readable through HTTP at once; bad lines are reported, exit 1', async () => {
    const file = path.join(tmp, 'in.ndjson');
    const good = Array.from({ length: 2500 }, (_, i) =>
      JSON.stringify({ project_user_id: `cli-${i}`, properties: { i } }),
    );
    good.splice(1200, 0, '{"project_user_id": oops');
    fs.writeFileSync(file, `${good.join('\n')}\n\n`);
    const result = await runCli(['users', 'import', '--project', project(), '--file', file], env());
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr.trim()).toBe('herald: 1 line(s) failed; their results are on stdout');
    const out = lines(result.stdout);
    expect(out).toEqual([
      { line: 1201, project_user_id: null, status: 'error', error: 'Line 1201 is not valid JSON' },
      { created: 2500, updated: 0, failed: 0 + 1 },
    ]);
    const res = await getUser('cli-2499');
    expect(res.statusCode).toBe(200);
    expect(res.json<{ properties: object }>().properties).toEqual({ i: 2499 });
  });

  it('imports from stdin (- or no file), merging into existing users, exit 0', async () => {
    const input = [
      JSON.stringify({ project_user_id: 'cli-0', properties: { extra: 'yes' } }),
      JSON.stringify({ project_user_id: 'stdin-new' }),
    ].join('\n');
    for (const args of [['--file', '-'], []]) {
      const result = await runCli(['users', 'import', '--project', project(), ...args], env(), input);
      expect(result.code, result.stderr).toBe(0);
      expect(lines(result.stdout)).toEqual([
        { created: args.length === 2 ? 1 : 0, updated: args.length === 2 ? 1 : 2, failed: 0 },
      ]);
    }
    expect((await getUser('cli-0')).json<{ properties: object }>().properties).toEqual({ i: 0, extra: 'yes' });
  });

  it('exports every user as NDJSON that imports back unchanged, with a filter, and only its project', async () => {
    const other = await ctx().newProject('cli-other');
    const otherImport = await runCli(
      ['users', 'import', '--project', other.project.project_id],
      env(),
      JSON.stringify({ project_user_id: 'other-only', properties: { b: 1 } }),
    );
    expect(otherImport.code, otherImport.stderr).toBe(0);

    const all = await runCli(['users', 'export', '--project', project()], env());
    expect(all.code, all.stderr).toBe(0);
    const exported = lines(all.stdout);
    expect(exported).toHaveLength(2501);
    const ids = exported.map((u) => u.project_user_id as string);
    expect(new Set(ids).size).toBe(2501);
    expect(ids).not.toContain('other-only');
    expect(exported.find((u) => u.project_user_id === 'cli-7')).toEqual({
      project_user_id: 'cli-7',
      properties: { i: 7 },
      created_at: expect.any(String),
      updated_at: expect.any(String),
      preferences: { project_user_id: 'cli-7', campaign_pushes: 'subscribed', topics: {}, updated_at: null },
    });

    const filtered = await runCli(
      [
        'users',
        'export',
        '--project',
        project(),
        '--filter',
        JSON.stringify({ property: 'i', op: 'gte', value: 2490 }),
      ],
      env(),
    );
    expect(filtered.code, filtered.stderr).toBe(0);
    expect(lines(filtered.stdout).map((u) => u.project_user_id)).toEqual(
      Array.from({ length: 10 }, (_, k) => `cli-${2490 + k}`).sort(),
    );

    // Round trip into another project: the export's lines are import input.
    const target = await ctx().newProject('cli-target');
    const back = await runCli(['users', 'import', '--project', target.project.project_id], env(), all.stdout);
    expect(back.code, back.stderr).toBe(0);
    expect(lines(back.stdout)).toEqual([{ created: 2501, updated: 0, failed: 0 }]);
    expect((await getUser('cli-7', target.secret)).json<{ properties: object }>().properties).toEqual({ i: 7 });
    // ...as it was: exported again, the target's users are the source's, timestamps included.
    const again = await runCli(['users', 'export', '--project', target.project.project_id], env());
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(all.stdout);
  });

  it('an import keeps the timestamps a line gives, refuses malformed ones, and an existing user keeps its created_at', async () => {
    const input = [
      {
        project_user_id: 'ts-1',
        properties: {},
        created_at: '2024-02-29T10:00:00.000Z',
        updated_at: '2024-03-01T08:30:00.250Z',
      },
      { project_user_id: 'ts-2', created_at: '2024-05-01T00:00:00+02:00' },
      { project_user_id: 'ts-3', created_at: 'yesterday' },
      { project_user_id: 'ts-4', created_at: '2024-05-02T00:00:00Z', updated_at: '2024-05-01T00:00:00Z' },
    ]
      .map((line) => JSON.stringify(line))
      .join('\n');
    const result = await runCli(['users', 'import', '--project', project()], env(), input);
    expect(result.code).toBe(1);
    expect(lines(result.stdout)).toEqual([
      {
        line: 3,
        project_user_id: 'ts-3',
        status: 'error',
        error: 'created_at must be an ISO 8601 date-time such as 2025-01-31T09:00:00.000Z',
      },
      { line: 4, project_user_id: 'ts-4', status: 'error', error: 'updated_at must not be before created_at' },
      { created: 2, updated: 0, failed: 2 },
    ]);
    const one = (await getUser('ts-1')).json<{ created_at: string; updated_at: string }>();
    expect([one.created_at, one.updated_at]).toEqual(['2024-02-29T10:00:00.000Z', '2024-03-01T08:30:00.250Z']);
    const two = (await getUser('ts-2')).json<{ created_at: string; updated_at: string }>();
    expect(two.created_at).toBe('2024-04-30T22:00:00.000Z');
    expect(Date.parse(two.updated_at)).toBeGreaterThan(Date.parse('2025-01-01T00:00:00Z')); // the import's time

    const merge = JSON.stringify({
      project_user_id: 'ts-1',
      properties: { more: 1 },
      created_at: '2020-01-01T00:00:00Z',
      updated_at: '2024-06-01T00:00:00Z',
    });
    expect((await runCli(['users', 'import', '--project', project()], env(), merge)).code).toBe(0);
    const merged = (await getUser('ts-1')).json<{ created_at: string; updated_at: string }>();
    expect([merged.created_at, merged.updated_at]).toEqual(['2024-02-29T10:00:00.000Z', '2024-06-01T00:00:00.000Z']);
  });

  it('a bad filter, an unknown or missing project or a missing file is one line on stderr without a stack', async () => {
    const bad = await runCli(
      ['users', 'export', '--project', project(), '--filter', '{"property":"x","op":"nope"}'],
      env(),
    );
    expect(bad.code).toBe(2); // a usage mistake, as every bad option value
    expect(bad.stderr).toMatch(/^herald: --filter: filter.op: unknown op "nope".*; usage: herald users export /);
    expect(bad.stderr).not.toMatch(/\n\s+at /);
    for (const command of ['import', 'export']) {
      const unknown = await runCli(['users', command, '--project', 'no-such-project'], env(), '');
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toBe('herald: Project no-such-project does not exist\n');
    }
    const noProject = await runCli(['users', 'export'], env());
    expect(noProject.code).toBe(2);
    expect(noProject.stderr).toMatch(/--project is required/);
    const noFile = await runCli(
      ['users', 'import', '--project', project(), '--file', path.join(tmp, 'missing.ndjson')],
      env(),
    );
    expect(noFile.code).toBe(2);
    expect(noFile.stderr).toMatch(/does not exist/);
  });
});

describe.each(TEST_DIALECTS)('herald users export and import carry preferences on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const env = () => ctx().database.env;
  const put = (secret: Record<string, string>, url: string, payload: unknown) =>
    ctx().inject({ method: 'PUT', url, headers: secret, payload: payload as object });
  const post = (secret: Record<string, string>, url: string, payload: unknown) =>
    ctx().inject({ method: 'POST', url, headers: secret, payload: payload as object });

  it("exports each user's preferences as GET .../preferences shows them, and they import back into another project", async () => {
    const projects = [await ctx().newProject('prefs-src'), await ctx().newProject('prefs-dst')];
    for (const p of projects) {
      expect((await post(p.secret, '/api/v1/topics', { key: 'promotions', name: 'Deals' })).statusCode).toBe(201);
      const news = { key: 'news', name: 'News', default_subscribed: false };
      expect((await post(p.secret, '/api/v1/topics', news)).statusCode).toBe(201);
    }
    const [source, target] = projects as [(typeof projects)[0], (typeof projects)[0]];
    for (const id of ['chooser', 'never']) {
      expect((await post(source.secret, '/api/v1/users', { project_user_id: id })).statusCode).toBe(200);
    }
    const chosen = { campaign_pushes: 'unsubscribed', topics: { news: 'subscribed' } };
    expect((await put(source.secret, '/api/v1/users/chooser/preferences', chosen)).statusCode).toBe(200);
    const shown = (
      await ctx().inject({ method: 'GET', url: '/api/v1/users/chooser/preferences', headers: source.secret })
    ).json<unknown>();

    const out = await runCli(['users', 'export', '--project', source.project.project_id], env());
    expect(out.code, out.stderr).toBe(0);
    const exported = lines(out.stdout);
    expect(exported.map((u) => u.preferences)).toEqual([
      shown,
      {
        project_user_id: 'never',
        campaign_pushes: 'subscribed',
        topics: { promotions: 'subscribed', news: 'unsubscribed' },
        updated_at: null,
      },
    ]);

    for (let round = 0; round < 2; round++) {
      const back = await runCli(['users', 'import', '--project', target.project.project_id], env(), out.stdout);
      expect(back.code, back.stderr).toBe(0);
    }
    const again = await runCli(['users', 'export', '--project', target.project.project_id], env());
    expect(again.stdout).toBe(out.stdout);
  });
});
