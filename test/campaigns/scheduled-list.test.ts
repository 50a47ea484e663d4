import { describe, expect, it } from 'vitest';
import { campaignTriggersQuery } from '../../src/campaigns/triggers/triggers.repository.js';
import { queryPlan } from '../helpers/query-plan.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createCampaign, json, triggerOk } from './campaign-helpers.js';

// `GET /api/v1/campaigns/{campaign_id}/triggers?state=scheduled`: the triggers still waiting for their
// `schedule.at` (the console's scheduled list), read through a partial index however many finished
// triggers the campaign holds.
describe.each(TEST_DIALECTS)('the scheduled-trigger list on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const iso = (ms: number) => new Date(ms).toISOString();

  it('lists only the scheduled triggers, newest first, paged; a canceled one leaves it', async () => {
    const campaignId = await createCampaign(ctx());
    const now = await triggerOk(ctx(), campaignId, {});
    const a = await triggerOk(ctx(), campaignId, { schedule: { at: iso(Date.now() + 3_600_000) } });
    const b = await triggerOk(ctx(), campaignId, { schedule: { at: iso(Date.now() + 7_200_000) } });
    const list = async (query: string) => {
      const res = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/triggers?${query}`);
      expect(res.statusCode, res.body).toBe(200);
      return res.json<{ triggers: Array<{ trigger_id: string; state: string }>; next_cursor: string | null }>();
    };
    const all = await list('');
    expect(all.triggers.map((t) => t.trigger_id)).toEqual([b, a, now]);
    const scheduled = await list('state=scheduled');
    expect(scheduled.triggers.map((t) => [t.trigger_id, t.state])).toEqual([
      [b, 'scheduled'],
      [a, 'scheduled'],
    ]);
    const first = await list('state=scheduled&limit=1');
    expect(first.triggers.map((t) => t.trigger_id)).toEqual([b]);
    const second = await list(`state=scheduled&limit=1&cursor=${first.next_cursor!}`);
    expect(second.triggers.map((t) => t.trigger_id)).toEqual([a]);
    expect(second.next_cursor).toBeNull();

    expect((await json(ctx(), 'POST', `/api/v1/campaigns/${campaignId}/triggers/${b}:cancel`, {})).statusCode).toBe(
      200,
    );
    expect((await list('state=scheduled')).triggers.map((t) => t.trigger_id)).toEqual([a]);
  });

  it('refuses any other state with a 400 that says so', async () => {
    const campaignId = await createCampaign(ctx());
    for (const state of ['running', 'completed', '', 'SCHEDULED']) {
      const res = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/triggers?state=${state}`);
      expect(res.statusCode, state).toBe(400);
      expect(res.json<{ error: string }>().error).toMatch(/state/);
    }
  });

  it('reads the partial index, not every trigger of the campaign', async () => {
    const query = campaignTriggersQuery(ctx().database.db, 'prj', 'cmp', 21, undefined, true).compile();
    const plan = await queryPlan(ctx().database.db, query);
    expect(plan).toMatch(/campaign_triggers_scheduled/);
  });
});
