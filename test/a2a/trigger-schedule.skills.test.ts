import { describe, expect, it } from 'vitest';
import { createCampaign, runFanout, triggerStatus } from '../campaigns/campaign-helpers.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { rpc, v03Message, v1Message } from './a2a-helpers.js';

describe.each(TEST_DIALECTS)('trigger-campaign with schedule and cancel-trigger skills on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const send = (data: Record<string, unknown>) =>
    rpc(ctx(), 'SendMessage', { message: v1Message(data) }, { version: '1.0' });
  const iso = (ms: number) => new Date(ms).toISOString();

  it('schedules a trigger, then cancels it: trigger-result with the state and counters', async () => {
    const campaignId = await createCampaign(ctx());
    const at = iso(Date.now() + 3_600_000);
    const made = (await send({ skill: 'trigger-campaign', campaignId, schedule: { at } })).json().result.task;
    expect(made.status.state).toBe('TASK_STATE_COMPLETED');
    const { triggerId } = made.artifacts[0].parts[0].data as { triggerId: string };
    expect(await triggerStatus(ctx(), campaignId, triggerId)).toMatchObject({ state: 'scheduled', scheduled_at: at });

    const canceled = (await send({ skill: 'cancel-trigger', campaignId, triggerId })).json().result.task;
    expect(canceled.status.state).toBe('TASK_STATE_COMPLETED');
    expect(canceled.artifacts[0]).toMatchObject({
      name: 'trigger-result',
      parts: [{ data: { triggerId, campaignId, state: 'canceled', counters: { accepted: 0 } } }],
    });
    expect((await triggerStatus(ctx(), campaignId, triggerId)).state).toBe('canceled');

    // v0.3 speaks the same skill.
    const legacy = (
      await rpc(ctx(), 'message/send', { message: v03Message({ skill: 'cancel-trigger', campaignId, triggerId }) })
    ).json().result;
    expect(legacy.status.state).toBe('completed');
    expect(legacy.artifacts[0].parts[0]).toMatchObject({ kind: 'data', data: { state: 'canceled' } });
  });

  it('a bad schedule is -32602 with no task; a finished trigger is rejected; an unknown one failed', async () => {
    const campaignId = await createCampaign(ctx());
    const bad = (await send({ skill: 'trigger-campaign', campaignId, schedule: { at: '2026-12-24T09:00' } })).json();
    expect(bad.error.code).toBe(-32602);
    expect(bad.error.message).toMatch(/without an offset/);
    const past = (
      await send({ skill: 'trigger-campaign', campaignId, schedule: { at: iso(Date.now() - 3_600_000) } })
    ).json().result.task;
    expect(past.status).toMatchObject({
      state: 'TASK_STATE_REJECTED',
      message: { metadata: { reason: 'SCHEDULE_IN_PAST' } },
    });

    const now = (await send({ skill: 'trigger-campaign', campaignId })).json().result.task;
    const { triggerId } = now.artifacts[0].parts[0].data as { triggerId: string };
    await runFanout(ctx());
    const finished = (await send({ skill: 'cancel-trigger', campaignId, triggerId })).json().result.task;
    expect(finished.status).toMatchObject({
      state: 'TASK_STATE_REJECTED',
      message: { metadata: { reason: 'TRIGGER_FINISHED' } },
    });
    const unknown = (
      await send({ skill: 'cancel-trigger', campaignId, triggerId: '0192f0c4-0000-7000-8000-000000000000' })
    ).json().result.task;
    expect(unknown.status).toMatchObject({
      state: 'TASK_STATE_FAILED',
      message: { metadata: { reason: 'TRIGGER_NOT_FOUND' } },
    });
    const malformed = (await send({ skill: 'cancel-trigger', campaignId })).json();
    expect(malformed.error.code).toBe(-32602);
  });

  it('the agent card lists cancel-trigger and a scheduled trigger-campaign example', async () => {
    const card = (await ctx().inject({ method: 'GET', url: '/.well-known/agent-card.json' })).json<{
      skills: Array<{ id: string; examples: string[] }>;
    }>();
    expect(card.skills.map((s) => s.id)).toContain('cancel-trigger');
    expect(card.skills.find((s) => s.id === 'trigger-campaign')!.examples.join('\n')).toContain('"schedule"');
  });
});
