import { describe, expect, it } from 'vitest';
import { createCampaign } from '../campaigns/campaign-helpers.js';
import { runCli } from '../helpers/processes.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

describe.each(TEST_DIALECTS)('herald campaign results on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const env = () => ctx().database.env;
  const project = () => ctx().project.project_id;

  it('prints what GET .../results answers (--json) or a table; unknown triggers and missing flags fail', async () => {
    const id = await createCampaign(ctx(), {});
    const json = await runCli(['campaign', 'results', '--project', project(), '--campaign', id, '--json'], env());
    expect(json.code, json.stderr).toBe(0);
    const api = await ctx().inject({ method: 'GET', url: `/api/v1/campaigns/${id}/results`, headers: ctx().secret });
    expect(JSON.parse(json.stdout)).toEqual(api.json());
    const text = await runCli(['campaign', 'results', '--project', project(), '--campaign', id], env());
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`campaign ${id} (intervals at 95%)`);
    expect(text.stdout).toContain('open rate [95% CI]');
    const badTrigger = await runCli(
      ['campaign', 'results', '--project', project(), '--campaign', id, '--trigger', 'nope'],
      env(),
    );
    expect(badTrigger.code).not.toBe(0);
    expect(badTrigger.stderr).toMatch(/Trigger nope does not exist/);
    const missing = await runCli(['campaign', 'results', '--project', project()], env());
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/--campaign/);
  });
});
