import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';
import { useConsoleHarness } from './console-harness.js';

// Campaign results in the console (rule `campaign-results`), in a real Chromium against a real
// Herald: an experiment with two variants and a control group sent through the fake FCM, some
// messages opened, and the results page showing each arm side by side as REST answers it.

interface Arm {
  variant: string | null;
  sent: number;
  delivered: number;
  opened: number;
  open_rate: { rate: number } | null;
  open_rate_lift: { difference: number } | null;
}

describe.each(TEST_DIALECTS)('console: campaign results, Herald on %s', (dialect) => {
  const h = useConsoleHarness(dialect, 'Results app');
  const run = crypto.randomBytes(3).toString('hex');
  const url = (path: string) => `${h().heraldUrl}/console${path}`;

  it('shows sends, deliveries, opens, open rate with its interval and lift per variant, linked from the campaign', async () => {
    const { page, project, api, step } = h();
    await api('PUT', '/api/v1/push-credentials/fcm', { service_account: h().fakes.fcm.serviceAccount(`fcm-${run}`) });
    const users = Array.from({ length: 40 }, (_, i) => `r${i}-${run}`);
    for (const id of users) {
      await api('POST', '/api/v1/users', { project_user_id: id, properties: {} });
      await api('POST', '/api/v1/devices', { project_user_id: id, platform: 'android', fcm_token: `ok-${id}` });
    }
    const { campaign_id: campaignId } = await api<{ campaign_id: string }>('POST', '/api/v1/campaigns', {
      campaign_id: `spring-${run}`,
      name: 'Spring sale test',
      status: 'active',
      api_triggered: true,
      message: { title: 'Spring sale' },
      variants: [
        { variant_id: 'a', weight: 1, message: { title: 'Spring sale', body: '20% off' } },
        { variant_id: 'b', weight: 1, message: { title: '20% off, this week only' } },
      ],
      control_percent: 20,
      conversion_goals: [{ event: 'purchase', deadline: '7d', revenue_property: 'amount' }],
    });
    const { trigger_id: triggerId } = await api<{ trigger_id: string }>(
      'POST',
      `/api/v1/campaigns/${campaignId}:trigger`,
      { audience: { targets: users.map((u) => ({ project_user_id: u })) } },
    );
    await waitFor(
      async () =>
        (await api<{ state: string }>('GET', `/api/v1/campaigns/${campaignId}/triggers/${triggerId}`)).state ===
        'completed',
      { timeoutMs: 60_000, intervalMs: 200, what: 'trigger completed' },
    );
    const { deliveries } = await api<{ deliveries: Array<{ message_id: string | null; status: string }> }>(
      'GET',
      `/api/v1/campaigns/${campaignId}/triggers/${triggerId}/deliveries?limit=100`,
    );
    const sent = deliveries.filter((d) => d.message_id !== null && d.status === 'DELIVERY_RESULT_STATUS_ACCEPTED');
    for (const d of sent.slice(0, Math.ceil(sent.length / 2)))
      await api('POST', `/api/v1/messages/${d.message_id}:open`, {});
    const rest = await api<{ variants: Arm[] }>('GET', `/api/v1/campaigns/${campaignId}/results`);
    expect(rest.variants.map((a) => a.variant)).toEqual(['a', 'b', 'control']);

    await page.goto(url('/'));
    await page.fill('#project-id', project.project_id);
    await page.fill('#secret-key', project.secret_key);
    await page.press('#secret-key', 'Enter');
    await step(page.waitForSelector('nav[aria-label="Main"]'));
    await page.goto(url(`/campaigns/${campaignId}`));
    await step(page.waitForSelector('h1:text-is("Spring sale test")'));
    await page.click('a:text-is("Results")');
    await step(page.waitForSelector('[data-testid=results] [data-variant=control]'));
    for (const arm of rest.variants) {
      const card = `[data-testid=results] [data-variant="${arm.variant}"]`;
      const text = async (field: string) => (await page.textContent(`${card} [data-field=${field}]`))?.trim();
      expect(await text('sent'), arm.variant!).toBe(String(arm.sent));
      expect(await text('delivered')).toBe(String(arm.delivered));
      expect(await text('opened')).toBe(String(arm.opened));
      if (arm.open_rate) expect(await text('open-rate')).toContain(`${(arm.open_rate.rate * 100).toFixed(1)}%`);
      else expect(await text('open-rate')).toBe('—');
      if (arm.open_rate_lift)
        expect(await text('lift')).toContain(`${Math.abs(arm.open_rate_lift.difference * 100).toFixed(1)} pp`);
    }
    expect(await page.textContent('[data-variant=control] h2')).toContain('Control');
    expect(await page.textContent('[data-variant=a] [data-field=goal-0]')).toMatch(/^\d+/);
    await h().shoot('campaign-results');

    // One trigger: the same figures (the campaign has only this one).
    await page.selectOption('#results-trigger', triggerId);
    await step(page.waitForURL(/\?trigger=/));
    await step(page.waitForSelector('[data-testid=results] [data-variant=a]'));
    expect((await page.textContent('[data-variant=a] [data-field=sent]'))?.trim()).toBe(String(rest.variants[0]!.sent));
  });
});
