import { describe, expect, it } from 'vitest';
import { createCampaign, json, trigger } from '../campaigns/campaign-helpers.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { rpc, v03Message, v1Message, type Json } from './a2a-helpers.js';

describe.each(TEST_DIALECTS)('list-campaigns skill on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const iso = (ms: number) => new Date(ms).toISOString();

  async function list(data: Record<string, unknown>, key?: string): Promise<Json> {
    const res = await rpc(
      ctx(),
      'SendMessage',
      { message: v1Message({ skill: 'list-campaigns', ...data }) },
      {
        version: '1.0',
        ...(key ? { key } : {}),
      },
    );
    return res.json();
  }

  it('lists the project’s campaigns newest first with delivery types and next occurrences, paged', async () => {
    const { project, secret } = await ctx().newProject('list-campaigns');
    const first = await createCampaign(ctx(), { name: 'First' }, secret);
    const second = await createCampaign(ctx(), { name: 'Second', api_triggered: false }, secret);
    const third = await createCampaign(ctx(), { name: 'Third', status: 'paused' }, secret);
    const soon = Date.now() + 3_600_000;
    const later = Date.now() + 7_200_000;
    for (const at of [later, soon]) {
      const res = await trigger(ctx(), first, { schedule: { at: iso(at) } }, { headers: secret });
      expect(res.statusCode).toBe(200);
    }
    expect((await trigger(ctx(), first, {}, { headers: secret })).statusCode).toBe(200); // sent now: not listed
    // One active recurring schedule counts; a paused one does not.
    const daily = await json(
      ctx(),
      'POST',
      `/api/v1/campaigns/${first}/schedules`,
      { cron: '0 9 * * *', time_zone: 'UTC' },
      secret,
    );
    expect(daily.statusCode, daily.body).toBe(201);
    const dailyNext = daily.json<{ next_occurrence_at: string }>().next_occurrence_at;
    const paused = await json(
      ctx(),
      'POST',
      `/api/v1/campaigns/${first}/schedules`,
      { cron: '0 10 * * *', time_zone: 'UTC' },
      secret,
    );
    const pausedId = paused.json<{ schedule_id: string }>().schedule_id;
    expect(
      (await json(ctx(), 'POST', `/api/v1/campaigns/${first}/schedules/${pausedId}:pause`, {}, secret)).statusCode,
    ).toBe(200);

    const task = (await list({}, project.secret_key)).result.task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts[0].name).toBe('campaign-list');
    const { campaigns, nextPageToken } = task.artifacts[0].parts[0].data;
    expect(nextPageToken).toBe('');
    expect(campaigns).toEqual([
      {
        campaignId: third,
        name: 'Third',
        status: 'paused',
        deliveryTypes: ['api_triggered'],
        scheduledTriggers: 0,
        recurringSchedules: 0,
        nextOccurrences: [],
      },
      {
        campaignId: second,
        name: 'Second',
        status: 'active',
        deliveryTypes: [],
        scheduledTriggers: 0,
        recurringSchedules: 0,
        nextOccurrences: [],
      },
      {
        campaignId: first,
        name: 'First',
        status: 'active',
        deliveryTypes: ['api_triggered', 'scheduled', 'recurring'],
        scheduledTriggers: 2,
        recurringSchedules: 1,
        nextOccurrences: [iso(soon), dailyNext].sort(),
      },
    ]);

    // Filtered and paged as GET /api/v1/campaigns.
    const active = (await list({ status: 'active', pageSize: 1 }, project.secret_key)).result.task;
    const page1 = active.artifacts[0].parts[0].data;
    expect(page1.campaigns.map((c: Json) => c.campaignId)).toEqual([second]);
    expect(page1.nextPageToken).not.toBe('');
    const page2 = (await list({ status: 'active', pageSize: 1, pageToken: page1.nextPageToken }, project.secret_key))
      .result.task.artifacts[0].parts[0].data;
    expect(page2.campaigns.map((c: Json) => c.campaignId)).toEqual([first]);
    expect(page2.nextPageToken).toBe('');

    // A canceled scheduled trigger no longer counts.
    const listed = await json(ctx(), 'GET', `/api/v1/campaigns/${first}/triggers`, undefined, secret);
    const scheduled = listed
      .json<{ triggers: Array<{ trigger_id: string; state: string; scheduled_at?: string }> }>()
      .triggers.find((t) => t.scheduled_at === iso(soon))!;
    const canceled = await json(
      ctx(),
      'POST',
      `/api/v1/campaigns/${first}/triggers/${scheduled.trigger_id}:cancel`,
      {},
      secret,
    );
    expect(canceled.statusCode).toBe(200);
    const after = (await list({ status: 'active' }, project.secret_key)).result.task.artifacts[0].parts[0].data;
    expect(after.campaigns.find((c: Json) => c.campaignId === first)).toMatchObject({
      scheduledTriggers: 1,
      nextOccurrences: [iso(later), dailyNext].sort(),
    });
  });

  it('sees only the key’s project, speaks v0.3, and refuses bad fields', async () => {
    const mine = await createCampaign(ctx(), { name: 'Mine' });
    const other = await ctx().newProject('list-campaigns-other');
    await createCampaign(ctx(), { name: 'Theirs' }, other.secret);
    const legacy = (await rpc(ctx(), 'message/send', { message: v03Message({ skill: 'list-campaigns' }) })).json()
      .result;
    expect(legacy.status.state).toBe('completed');
    const names = legacy.artifacts[0].parts[0].data.campaigns.map((c: Json) => c.name);
    expect(names).toContain('Mine');
    expect(names).not.toContain('Theirs');
    expect(legacy.artifacts[0].parts[0].data.campaigns.map((c: Json) => c.campaignId)).toContain(mine);

    for (const bad of [{ pageSize: 0 }, { pageSize: 101 }, { status: 'deleted' }, { pageSize: 'ten' }]) {
      const res = await list(bad);
      expect(res.error?.code, JSON.stringify(bad)).toBe(-32602);
    }
    const badToken = (await list({ pageToken: 'not-a-token' })).result.task;
    expect(badToken.status).toMatchObject({
      state: 'TASK_STATE_REJECTED',
      message: { metadata: { reason: 'INVALID_CURSOR' } },
    });
  });

  it('is on the agent card', async () => {
    const card = (await ctx().inject({ method: 'GET', url: '/.well-known/agent-card.json' })).json<{
      skills: Array<{ id: string }>;
    }>();
    expect(card.skills.map((s) => s.id)).toContain('list-campaigns');
  });
});
