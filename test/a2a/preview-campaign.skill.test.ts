import { describe, expect, it } from 'vitest';
import { createCampaign, createUser, json } from '../campaigns/campaign-helpers.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { rpc, v03Message, v1Message } from './a2a-helpers.js';

describe.each(TEST_DIALECTS)('preview-campaign skill on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const send = (data: Record<string, unknown>) =>
    rpc(ctx(), 'SendMessage', { message: v1Message({ skill: 'preview-campaign', ...data }) }, { version: '1.0' });

  it('answers preview-result: the REST preview in camelCase, under v1 and v0.3', async () => {
    await createUser(ctx(), 'ada', { first_name: 'Ada' });
    const campaignId = await createCampaign(ctx(), {
      message: {
        title: 'Hi {{ user.first_name }}',
        body: '{{ trigger.coupon }}',
        landing_url: 'https://example.com/x',
      },
    });
    const task = (await send({ campaignId, projectUserId: 'ada', properties: { coupon: 'SPRING' } })).json().result
      .task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts[0].name).toBe('preview-result');
    const data = task.artifacts[0].parts[0].data;
    const rest = (
      await json(ctx(), 'POST', `/api/v1/campaigns/${campaignId}:preview`, {
        project_user_id: 'ada',
        properties: { coupon: 'SPRING' },
      })
    ).json();
    expect(data).toEqual({
      title: 'Hi Ada',
      body: 'SPRING',
      landingUrl: 'https://example.com/x',
      payloads: rest.payloads,
      warnings: [],
      locale: { userLocale: null, messageLocale: null },
    });
    // Rule `message-locales`: a locale asked for renders its fields, falling back along the chain.
    const localized = await createCampaign(ctx(), {
      message: { title: 'Hello', locales: { fr: { title: 'Bonjour {{ user.first_name }}' } } },
    });
    const fr = (await send({ campaignId: localized, projectUserId: 'ada', locale: 'fr-CA' })).json().result.task;
    expect(fr.artifacts[0].parts[0].data).toMatchObject({
      title: 'Bonjour Ada',
      locale: { userLocale: 'fr-CA', messageLocale: 'fr' },
    });
    const bad = (await send({ campaignId: localized, projectUserId: 'ada', locale: 'not a tag' })).json();
    expect(JSON.stringify(bad)).toMatch(/BCP 47/);
    const legacy = await rpc(ctx(), 'message/send', {
      message: v03Message({ skill: 'preview-campaign', campaignId, projectUserId: 'ada' }),
    });
    const result = legacy.json().result;
    expect(result.status.state).toBe('completed');
    expect(result.artifacts[0].parts[0]).toMatchObject({
      kind: 'data',
      data: { title: 'Hi Ada', warnings: [{ code: 'missing_property', property: 'coupon' }] },
    });
  });

  it('an unknown campaign or user ends failed; malformed fields are -32602', async () => {
    await createUser(ctx(), 'bo');
    const campaignId = await createCampaign(ctx());
    const unknown = (await send({ campaignId: 'no-such-campaign', projectUserId: 'bo' })).json().result.task;
    expect(unknown.status).toMatchObject({
      state: 'TASK_STATE_FAILED',
      message: { metadata: { reason: 'CAMPAIGN_NOT_FOUND' } },
    });
    const nobody = (await send({ campaignId, projectUserId: 'nobody' })).json().result.task;
    expect(nobody.status).toMatchObject({
      state: 'TASK_STATE_FAILED',
      message: { metadata: { reason: 'USER_NOT_FOUND' } },
    });
    for (const data of [{ campaignId }, { campaignId, projectUserId: 'bo', properties: { x: { nested: true } } }]) {
      const res = await send(data);
      expect(res.json().error.code, JSON.stringify(data)).toBe(-32602);
    }
  });
});
