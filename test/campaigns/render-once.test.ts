import { describe, expect, it, vi } from 'vitest';
import { messageReadsUser } from '../../src/campaigns/templates/template-reads.js';
import { parseMessageTemplate } from '../../src/campaigns/templates/templates.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import { createCampaign, createUser, runFanout, triggerOk, triggerStatus } from './campaign-helpers.js';

const readsUser = (title: string, body = 'x') => messageReadsUser(parseMessageTemplate({ title, body }));

describe('which messages read their recipient (static analysis)', () => {
  it('counts every way a template can reach user, and only those', () => {
    expect(readsUser('Hi {{ user.first_name }}')).toBe(true);
    expect(readsUser('x', '{{ user["first_name"] | default: "you" }}')).toBe(true);
    expect(readsUser('{% if user.vip %}VIP{% endif %}')).toBe(true);
    expect(readsUser('{{ trigger[user.key] }}')).toBe(true); // a nested read
    expect(readsUser('{% assign u = user %}{{ u.first_name }}')).toBe(true);
    expect(readsUser('{% for p in user %}{{ p }}{% endfor %}')).toBe(true);
    expect(readsUser('{% capture c %}{{ user.project_user_id }}{% endcapture %}{{ c }}')).toBe(true);
    expect(readsUser('{{ ["user"].first_name }}')).toBe(true);
    expect(readsUser('{{ [trigger.root].first_name }}')).toBe(true); // a root only known at render time
    expect(readsUser('{{ trigger.a | append: [trigger.k] }}')).toBe(true);
    expect(readsUser('{% if [trigger.k] %}y{% endif %}')).toBe(true);
    expect(readsUser('Sale: {{ trigger.code }}', '{{ campaign.name }} {% assign n = 2 %}{{ n }}')).toBe(false);
    expect(readsUser('{{ "user.first_name" }}', '{{ users.x | default: 1 }} {{ trigger.user }}')).toBe(false);
    expect(readsUser('No variables at all')).toBe(false);
  });
});

describe.each(TEST_DIALECTS)('a message that reads no user renders once per batch on %s', (dialect) => {
  const fakes = useFakeProviders();
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });

  it('sends the same rendered message to everyone with one render per batch, still in the render workers', async () => {
    const { secret } = await ctx().newProject('once');
    await configureProviders(ctx(), secret, fakes());
    const tokens: string[] = [];
    for (const user of ['a', 'b', 'c']) {
      await createUser(ctx(), user, { first_name: user.toUpperCase() }, secret);
      tokens.push(fcmToken());
      await registerDevice(ctx(), secret, user, { fcm_token: tokens.at(-1)! });
    }
    const render = vi.spyOn(ctx().herald.templates, 'render');
    try {
      const plain = await createCampaign(
        ctx(),
        { name: 'Sale', message: { title: 'Sale {{ trigger.code }}', body: '{{ campaign.name }} today' } },
        secret,
      );
      const plainTrigger = await triggerOk(
        ctx(),
        plain,
        { audience: { broadcast: true }, properties: { code: 'S1' } },
        secret,
      );
      await runFanout(ctx());
      // One batch, one scope rendered, and its user is empty: nothing of a recipient reaches another.
      expect(render.mock.calls.map(([, scopes]) => scopes.length)).toEqual([1]);
      expect(render.mock.calls[0]![1][0]!.user).toEqual({});
      const sent = fakes().fcm.recorder.items.filter((i) => i.status === 200 && tokens.includes(i.token));
      expect(sent.map((i) => i.token).sort()).toEqual([...tokens].sort());
      for (const item of sent)
        expect((item.body as { notification: unknown }).notification).toEqual({ title: 'Sale S1', body: 'Sale today' });
      expect((await triggerStatus(ctx(), plain, plainTrigger, secret)).counters).toMatchObject({
        devices: 3,
        accepted: 3,
      });

      // A personalised message still renders per recipient.
      render.mockClear();
      const personal = await createCampaign(ctx(), { message: { title: 'Hi {{ user.first_name }}' } }, secret);
      await triggerOk(ctx(), personal, { audience: { broadcast: true } }, secret);
      await runFanout(ctx());
      expect(render.mock.calls.map(([, scopes]) => scopes.length)).toEqual([3]);
    } finally {
      render.mockRestore();
    }
  });

  it('a message that reads no user and fails to render skips every recipient of the batch, with the reason', async () => {
    const { secret } = await ctx().newProject('once-fails');
    await configureProviders(ctx(), secret, fakes());
    for (const user of ['a', 'b']) {
      await createUser(ctx(), user, {}, secret);
      await registerDevice(ctx(), secret, user, { fcm_token: fcmToken() });
    }
    // Renders empty for everyone (an empty title and body): the same failure each recipient would meet.
    const campaignId = await createCampaign(
      ctx(),
      { message: { title: '{{ trigger.t | default: "" }}', body: '{{ trigger.b | default: "" }}' } },
      secret,
    );
    const triggerId = await triggerOk(ctx(), campaignId, { audience: { broadcast: true } }, secret);
    await runFanout(ctx());
    const st = await triggerStatus(ctx(), campaignId, triggerId, secret);
    expect(st.state).toBe('completed');
    expect(st.counters).toMatchObject({ devices: 2, accepted: 0, skipped: { empty_message: 2 } });
  });
});
