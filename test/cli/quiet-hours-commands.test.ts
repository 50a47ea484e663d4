import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/processes.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

describe.each(TEST_DIALECTS)('herald quiet-hours on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const env = () => ctx().database.env;
  const project = () => ctx().project.project_id;

  it('sets, shows and removes the project default; the API reads the same', async () => {
    const set = await runCli(
      ['quiet-hours', 'set', '--project', project(), '--start', '21:30', '--end', '07:00'],
      env(),
    );
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toEqual({ quiet_hours: { start: '21:30', end: '07:00' } });
    const got = await runCli(['quiet-hours', 'get', '--project', project()], env());
    expect(got.code, got.stderr).toBe(0);
    expect(JSON.parse(got.stdout)).toEqual({ quiet_hours: { start: '21:30', end: '07:00' } });
    const api = await ctx().inject({ method: 'GET', url: '/api/v1/settings/quiet-hours', headers: ctx().secret });
    expect(api.json()).toEqual({ quiet_hours: { start: '21:30', end: '07:00' } });
    const off = await runCli(['quiet-hours', 'set', '--project', project(), '--none'], env());
    expect(off.code, off.stderr).toBe(0);
    expect(JSON.parse((await runCli(['quiet-hours', 'get', '--project', project()], env())).stdout)).toEqual({
      quiet_hours: null,
    });
  });

  it('says why a window or the flags are refused', async () => {
    const equal = await runCli(
      ['quiet-hours', 'set', '--project', project(), '--start', '08:00', '--end', '08:00'],
      env(),
    );
    expect(equal.code).not.toBe(0);
    expect(equal.stderr).toMatch(/must not be empty/);
    const malformed = await runCli(
      ['quiet-hours', 'set', '--project', project(), '--start', '8pm', '--end', '08:00'],
      env(),
    );
    expect(malformed.code).not.toBe(0);
    expect(malformed.stderr).toMatch(/quiet_hours\.start: expected a 24-hour time/);
    const half = await runCli(['quiet-hours', 'set', '--project', project(), '--start', '21:00'], env());
    expect(half.code).not.toBe(0);
    expect(half.stderr).toMatch(/give --start and --end, or --none/);
    const both = await runCli(['quiet-hours', 'set', '--project', project(), '--none', '--start', '21:00'], env());
    expect(both.code).not.toBe(0);
    expect(both.stderr).toMatch(/give --start and --end, or --none/);
  });
});
