import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/processes.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

describe.each(TEST_DIALECTS)('herald caps on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const env = () => ctx().database.env;
  const project = () => ctx().project.project_id;
  const file = async (body: unknown) => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'herald-caps-'));
    const name = path.join(dir, 'caps.json');
    await fs.writeFile(name, typeof body === 'string' ? body : JSON.stringify(body));
    return name;
  };

  it('sets the rules from a file and prints them; get shows what the API shows', async () => {
    const rules = [
      { max: 3, per: 'day' },
      { max: 1, per: { minutes: 30 }, tag: 'promo' },
    ];
    const set = await runCli(['caps', 'set', '--project', project(), '--file', await file({ rules })], env());
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toEqual({ rules });
    const got = await runCli(['caps', 'get', '--project', project()], env());
    expect(got.code, got.stderr).toBe(0);
    expect(JSON.parse(got.stdout)).toEqual({ rules });
    const api = await ctx().inject({ method: 'GET', url: '/api/v1/project/frequency-caps', headers: ctx().secret });
    expect(api.json()).toEqual({ rules });
  });

  it('refuses bad rules, unreadable files and a missing --file with a message and a non-zero exit', async () => {
    const before = JSON.parse((await runCli(['caps', 'get', '--project', project()], env())).stdout) as unknown;
    const bad = await runCli(
      ['caps', 'set', '--project', project(), '--file', await file({ rules: [{ max: 1, per: 'month' }] })],
      env(),
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/per/);
    const notJson = await runCli(['caps', 'set', '--project', project(), '--file', await file('{nope')], env());
    expect(notJson.code).not.toBe(0);
    expect(notJson.stderr.length).toBeGreaterThan(0);
    const missing = await runCli(['caps', 'set', '--project', project()], env());
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/--file/);
    const got = await runCli(['caps', 'get', '--project', project()], env());
    expect(JSON.parse(got.stdout)).toEqual(before);
  });
});
