import { describe, expect, it } from 'vitest';
import { createCampaign, createUser } from '../campaigns/campaign-helpers.js';
import { runCli } from '../helpers/processes.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

describe.each(TEST_DIALECTS)('herald campaign explain on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const env = () => ctx().database.env;
  const project = () => ctx().project.project_id;

  it('prints what GET .../eligibility answers; unknown users and missing flags fail with a message', async () => {
    await createUser(ctx(), 'cli-ada', { plan: 'free' });
    const id = await createCampaign(ctx(), { segment: { property: 'plan', op: 'eq', value: 'pro' } });
    const out = await runCli(['campaign', 'explain', '--project', project(), '--id', id, '--user', 'cli-ada'], env());
    expect(out.code, out.stderr).toBe(0);
    const printed = JSON.parse(out.stdout) as { eligible: boolean; gates: Array<{ gate: string; reason: string }> };
    const api = await ctx().inject({
      method: 'GET',
      url: `/api/v1/campaigns/${id}/eligibility?project_user_id=cli-ada`,
      headers: ctx().secret,
    });
    expect(printed.eligible).toBe(false);
    // The quiet-hours gate shows the user's clock to the minute: the two answers may straddle a minute.
    const sameMinute = (gates: unknown[]) =>
      JSON.parse(JSON.stringify(gates).replace(/"local_time":"\d\d:\d\d"/g, '"local_time":"HH:MM"')) as unknown[];
    expect(JSON.stringify(printed.gates)).toMatch(/"local_time":"\d\d:\d\d"/);
    expect(sameMinute(printed.gates)).toEqual(sameMinute(api.json<{ gates: unknown[] }>().gates));
    expect(printed.gates[0]).toMatchObject({ gate: 'segment', reason: 'NOT_IN_SEGMENT' });

    const nobody = await runCli(['campaign', 'explain', '--project', project(), '--id', id, '--user', 'nobody'], env());
    expect(nobody.code).not.toBe(0);
    expect(nobody.stderr).toMatch(/User nobody does not exist/);
    const badTrigger = await runCli(
      ['campaign', 'explain', '--project', project(), '--id', id, '--user', 'cli-ada', '--trigger', 'x'],
      env(),
    );
    expect(badTrigger.code).not.toBe(0);
    expect(badTrigger.stderr).toMatch(/trigger_id/);
    const missing = await runCli(['campaign', 'explain', '--project', project(), '--id', id], env());
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/--user/);
  });
});
