import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/processes.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

/** `herald retention ...` as a child process, against the same database as an app. */
describe.each(TEST_DIALECTS)('herald retention commands on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const cli = (...args: string[]) => runCli(args, { ...ctx().database.env, RETENTION_EVENTS_DAYS: '60' });

  it('sets, shows and resets a project override; refuses bad values with a clear message', async () => {
    const project = ctx().project.project_id;
    const set = await cli('retention', 'set', '--project', project, '--events-days', '14', '--tasks-days', '2');
    expect(set.code, set.stderr).toBe(0);
    const shown = await cli('retention', 'show', '--project', project, '--json');
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toEqual({
      project_id: project,
      retention: {
        deliveries: { days: 30, source: 'default' },
        events: { days: 14, source: 'project' },
        tasks: { days: 2, source: 'project' },
      },
    });

    const tooLong = await cli('retention', 'set', '--project', project, '--events-days', '61');
    expect(tooLong.code).toBe(1);
    expect(tooLong.stderr).toMatch(/events: a project may keep rows at most the operator's 60 days, got 61/);
    const notANumber = await cli('retention', 'set', '--project', project, '--events-days', 'soon');
    expect(notANumber.code).toBe(2);
    expect(notANumber.stderr).toMatch(/--events-days must be a whole number of days or "default"/);
    const nothing = await cli('retention', 'set', '--project', project);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toMatch(/name at least one of/);
    const unknown = await cli('retention', 'show', '--project', 'no-such-project');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/Project no-such-project does not exist/);

    const reset = await cli('retention', 'set', '--project', project, '--events-days', 'default');
    expect(reset.code, reset.stderr).toBe(0);
    const table = await cli('retention', 'show', '--project', project);
    expect(table.stdout).toMatch(/events\s+60\s+default/);
    expect(table.stdout).toMatch(/tasks\s+2\s+project/);

    const run = await cli('retention', 'run');
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ unfinished: false });
  });
});
