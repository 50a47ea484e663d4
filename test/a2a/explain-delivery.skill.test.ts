import { describe, expect, it } from 'vitest';
import { createCampaign, createUser, json } from '../campaigns/campaign-helpers.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { rpc, v03Message, v1Message } from './a2a-helpers.js';

describe.each(TEST_DIALECTS)('explain-delivery skill on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const send = (data: Record<string, unknown>) =>
    rpc(ctx(), 'SendMessage', { message: v1Message({ skill: 'explain-delivery', ...data }) }, { version: '1.0' });

  it('answers eligibility-result: the REST explanation in camelCase, under v1 and v0.3', async () => {
    await createUser(ctx(), 'ada', { plan: 'free' });
    const campaignId = await createCampaign(ctx(), { segment: { property: 'plan', op: 'eq', value: 'pro' } });
    const task = (await send({ campaignId, projectUserId: 'ada' })).json().result.task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts[0].name).toBe('eligibility-result');
    const data = task.artifacts[0].parts[0].data;
    const rest = (await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/eligibility?project_user_id=ada`)).json<{
      gates: Array<{ summary: string }>;
    }>();
    expect(data).toMatchObject({ campaignId, projectUserId: 'ada', eligible: false, evaluatedAt: expect.any(String) });
    expect(data.gates).toEqual(rest.gates);
    expect(data.gates.slice(0, 3)).toMatchObject([
      { gate: 'segment', verdict: 'fail', reason: 'NOT_IN_SEGMENT', data: { user_properties: { plan: 'free' } } },
      { gate: 'audience', verdict: 'not_applicable', reason: null },
      { gate: 'devices', verdict: 'fail', reason: 'NO_DEVICE' },
    ]);
    const legacy = await rpc(ctx(), 'message/send', {
      message: v03Message({ skill: 'explain-delivery', campaignId, projectUserId: 'ada' }),
    });
    const result = legacy.json().result;
    expect(result.status.state).toBe('completed');
    expect(result.artifacts[0].name).toBe('eligibility-result');
    expect(result.artifacts[0].parts[0]).toMatchObject({
      kind: 'data',
      data: {
        campaignId,
        eligible: false,
        gates: expect.arrayContaining([expect.objectContaining({ gate: 'rate_limit' })]),
      },
    });
  });

  it('an unknown campaign, user or trigger ends failed; malformed fields are -32602', async () => {
    await createUser(ctx(), 'bo');
    const campaignId = await createCampaign(ctx());
    for (const [data, reason] of [
      [{ campaignId: 'no-such-campaign', projectUserId: 'bo' }, 'CAMPAIGN_NOT_FOUND'],
      [{ campaignId, projectUserId: 'nobody' }, 'USER_NOT_FOUND'],
      [{ campaignId, projectUserId: 'bo', triggerId: '0192f0c4-6c1e-7d3a-9a51-2b8e4c7f1a20' }, 'TRIGGER_NOT_FOUND'],
    ] as const) {
      const task = (await send(data)).json().result.task;
      expect(task.status, reason).toMatchObject({ state: 'TASK_STATE_FAILED', message: { metadata: { reason } } });
    }
    for (const data of [
      { campaignId },
      { projectUserId: 'bo' },
      { campaignId, projectUserId: 'bo', triggerId: 'not-a-trigger' },
      { campaignId, projectUserId: 42 },
    ]) {
      const res = await send(data);
      expect(res.json().error?.code, JSON.stringify(data)).toBe(-32602);
    }
  });
});
