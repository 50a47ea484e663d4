import { describe, expect, it } from 'vitest';
import { json } from '../campaigns/campaign-helpers.js';
import { runCli } from '../helpers/processes.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

describe.each(TEST_DIALECTS)('herald campaign pending-sends on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const env = () => ctx().database.env;
  const project = () => ctx().project.project_id;

  it("lists a campaign's pending sends with counts, and a user's; refuses bad usage with exit 2", async () => {
    const created = await json(ctx(), 'POST', '/api/v1/campaigns', {
      name: 'Cart',
      status: 'active',
      event_trigger: { event: 'cart_abandoned', delay: 'PT30M' },
      message: { title: 'Back? {{ event.properties.items | default: 0 }}' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const campaignId = created.json<{ campaign_id: string }>().campaign_id;
    const tracked = await json(ctx(), 'POST', '/api/v1/events', { project_user_id: 'cli-u', name: 'cart_abandoned' });
    expect(tracked.statusCode).toBe(200);

    const byCampaign = await runCli(['campaign', 'pending-sends', '--project', project(), '--id', campaignId], env());
    expect(byCampaign.code, byCampaign.stderr).toBe(0);
    expect(JSON.parse(byCampaign.stdout)).toMatchObject({
      pending_sends: [{ campaign_id: campaignId, project_user_id: 'cli-u', state: 'pending' }],
      counts: { pending: 1, fired: 0, canceled: 0, sent: 0 },
    });
    const byUser = await runCli(
      ['campaign', 'pending-sends', '--project', project(), '--user', 'cli-u', '--state', 'pending'],
      env(),
    );
    expect(byUser.code, byUser.stderr).toBe(0);
    expect(JSON.parse(byUser.stdout).pending_sends).toHaveLength(1);

    const neither = await runCli(['campaign', 'pending-sends', '--project', project()], env());
    expect(neither.code).toBe(2);
    expect(neither.stderr).toMatch(/either --id or --user/);
    const badState = await runCli(
      ['campaign', 'pending-sends', '--project', project(), '--id', campaignId, '--state', 'sent'],
      env(),
    );
    expect(badState.code).toBe(2);
    expect(badState.stderr).toMatch(/--state must be one of/);
  });
});
