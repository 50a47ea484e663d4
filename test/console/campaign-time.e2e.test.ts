import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';
import { useConsoleHarness } from './console-harness.js';

// The console's time features in a real Chromium against a real Herald process: a trigger sent in
// each user's local time, the scheduled and recurring lists with their actions, the event-trigger
// fields of the campaign form, and pending sends on the campaign and user pages. The steps build on
// each other: one project, one campaign.

describe.each(TEST_DIALECTS)('console: campaigns that know time, Herald on %s', (dialect) => {
  const h = useConsoleHarness(dialect, 'Time app');
  const run = crypto.randomBytes(3).toString('hex');
  const campaignId = `reminder-${run}`;
  const ada = `ada-${run}`;
  const campaignUrl = () => `${h().heraldUrl}/console/campaigns/${campaignId}`;

  it('signs in and opens a campaign', async () => {
    const { page, project, api, step } = h();
    await api('POST', '/api/v1/campaigns', {
      campaign_id: campaignId,
      name: 'Cart reminder',
      status: 'active',
      api_triggered: true,
      default_audience: { broadcast: true },
      message: { title: 'Still there?', body: 'Hi {{ user.project_user_id }}' },
    });
    await page.goto(`${h().heraldUrl}/console/`);
    await page.fill('#project-id', project.project_id);
    await page.fill('#secret-key', project.secret_key);
    await page.press('#secret-key', 'Enter');
    await step(page.waitForSelector('nav[aria-label="Main"]'));
    await page.goto(campaignUrl());
    await step(page.waitForSelector('h1:text-is("Cart reminder")'));
  });

  it('makes the campaign event-triggered from its form, with a delay and a cancel event', async () => {
    const { page, api, step } = h();
    await page.check('#event-trigger-enabled');
    await page.fill('#event-trigger-event', 'cart_abandoned');
    await page.fill('#event-trigger-delay', '2');
    await page.selectOption('#event-trigger-unit', 'hours');
    await page.fill('#event-trigger-cancel', 'purchase, checkout');
    // The event's condition tests its own properties: the builder offers no event conditions there.
    const eventCondition = page.locator('fieldset.condition:has(legend:text-is("Event condition"))');
    expect(await eventCondition.locator('button:text-is("+ Property condition")').count()).toBe(1);
    expect(await eventCondition.locator('button:text-is("+ Event condition")').count()).toBe(0);
    await page.click('button:text-is("Save changes")');
    await step(page.waitForSelector('[data-testid=save-note]:has-text("Saved at")'));
    const stored = await api<{ event_trigger: unknown }>('GET', `/api/v1/campaigns/${campaignId}`);
    expect(stored.event_trigger).toEqual({
      event: 'cart_abandoned',
      delay: 7200,
      cancel_on: [{ event: 'purchase' }, { event: 'checkout' }],
    });
    // A blank event name is refused in the form, before any request.
    await page.fill('#event-trigger-event', '');
    await page.click('button:text-is("Save changes")');
    await step(page.waitForSelector('[role=alert]:has-text("name the event")'));
    await page.fill('#event-trigger-event', 'cart_abandoned');
    await h().shoot('campaign-event-trigger', { viewport: true, scrollTo: 'legend:text-is("Event trigger")' });
  });

  it("shows a user's event as a pending send on the campaign's page and on the user's", async () => {
    const { page, api, step } = h();
    await api('POST', '/api/v1/users', { project_user_id: ada, properties: {} });
    await api('POST', '/api/v1/events', { project_user_id: ada, name: 'cart_abandoned', properties: {} });
    await page.goto(campaignUrl());
    await step(page.waitForSelector('[data-testid=pending-counts]'));
    expect(await page.textContent('[data-testid=pending-counts]')).toBe('1 waiting, 0 fired (0 sent), 0 canceled.');
    expect(await page.textContent('section[aria-labelledby=pending-campaign-heading] tbody')).toContain(ada);
    await h().shoot('campaign-pending-sends', { viewport: true, scrollTo: '#pending-campaign-heading' });

    await page.click(`section[aria-labelledby=pending-campaign-heading] a:text-is("${ada}")`);
    await step(page.waitForSelector('#pending-user-heading'));
    const row = page.locator('section[aria-labelledby=pending-user-heading] tbody tr');
    await step(row.first().waitFor());
    expect(await row.count()).toBe(1);
    expect(await row.getAttribute('data-state')).toBe('pending');
    expect(await row.textContent()).toContain(campaignId);
    await h().shoot('user-pending-sends', { scrollTo: '#pending-user-heading' });
  });

  it("schedules a trigger in each user's local time, shows its first and last send, lists it and cancels it", async () => {
    const { page, api, step } = h();
    await page.goto(campaignUrl());
    await step(page.waitForSelector('#trigger-heading'));
    await page.check('input[name=when][value=local]');
    const tomorrow = await page.evaluate(() => {
      const d = new Date(Date.now() + 2 * 86_400_000);
      const two = (n: number) => String(n).padStart(2, '0');
      return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
    });
    await page.fill('#trigger-at', `${tomorrow}T09:00`);
    // The first zone reaches 09:00 at 19:00 UTC the day before (UTC+14), the last at 21:00 UTC (UTC−12).
    const [first, last] = await page.evaluate(
      (day) => [
        new Date(new Date(`${day}T09:00:00Z`).getTime() - 14 * 3_600_000).toLocaleString(),
        new Date(new Date(`${day}T09:00:00Z`).getTime() + 12 * 3_600_000).toLocaleString(),
      ],
      tomorrow,
    );
    const hint = await page.textContent('[data-testid=send-time]');
    expect(hint).toContain(`first sends go out ${first} (UTC+14)`);
    expect(hint).toContain(`last ${last} (UTC−12)`);
    await page.selectOption('#trigger-missed', 'next_day');
    await page.fill('#trigger-fallback-zone', 'Europe/Paris');
    await h().shoot('trigger-local-time', { viewport: true, scrollTo: '#trigger-heading' });

    await page.click('button:text-is("Schedule…")');
    await step(page.waitForSelector('dialog[open]'));
    expect(await page.textContent('dialog[open]')).toContain(`when it is ${tomorrow} 09:00 for each user`);
    const sent = page.waitForRequest((request) => request.url().endsWith(':trigger'));
    await page.click('dialog[open] button:text-is("Schedule")');
    expect((await sent).postDataJSON()).toMatchObject({
      schedule: {
        at: `${tomorrow}T09:00`,
        in_local_time: true,
        missed: 'next_day',
        fallback_time_zone: 'Europe/Paris',
      },
    });
    await step(page.waitForSelector('[data-testid=trigger-state][data-state=scheduled]'));
    const triggerId = page.url().split('/triggers/')[1]!;

    await page.goto(campaignUrl());
    await step(page.waitForSelector(`[data-testid=scheduled-triggers] a[href$="${triggerId}"]`));
    await h().shoot('campaign-scheduled-list', { viewport: true, scrollTo: '#schedules-heading' });
    await page.click('[data-testid=scheduled-triggers] button:text-is("Cancel…")');
    await step(page.waitForSelector('dialog[open] h2:text-is("Cancel this scheduled trigger?")'));
    await page.click('dialog[open] button:text-is("Cancel trigger")');
    await step(page.waitForSelector('[data-testid=scheduled-triggers]', { state: 'detached' }));
    expect(await api('GET', `/api/v1/campaigns/${campaignId}/triggers/${triggerId}`)).toMatchObject({
      state: 'canceled',
    });
  });

  it('adds a recurring schedule, pauses, resumes and deletes it after asking', async () => {
    const { page, api, step } = h();
    await page.goto(campaignUrl());
    await step(page.waitForSelector('#new-schedule-heading'));
    // The browser's zone is the default: the person's own (Chromium names Kolkata by its older name).
    const zone = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
    expect(zone).toMatch(/^Asia\/(Kolkata|Calcutta)$/);
    expect(await page.inputValue('#schedule-zone')).toBe(zone);
    await page.fill('#schedule-cron', 'every minute');
    await page.click('button:text-is("Add schedule")');
    await step(page.waitForSelector('section[aria-labelledby=schedules-heading] [role=alert]'));
    await page.fill('#schedule-cron', '30 9 * * 1');
    await page.click('button:text-is("Add schedule")');
    await step(page.waitForSelector('[data-testid=schedule-created]:has-text("Created: next")'));
    const item = page.locator('[data-testid=recurring-schedules] li');
    await step(item.first().waitFor());
    expect(await item.count()).toBe(1);
    expect(await item.textContent()).toContain(`30 9 * * 1 in ${zone}`);
    const scheduleId = (await item.getAttribute('data-schedule'))!;
    const stored = await api<{ next_occurrence_at: string; state: string }>(
      'GET',
      `/api/v1/campaigns/${campaignId}/schedules/${scheduleId}`,
    );
    expect(stored.state).toBe('active');
    // Mondays at 09:30 in Kolkata: 04:00 UTC.
    expect(new Date(stored.next_occurrence_at).getUTCDay()).toBe(1);
    expect(stored.next_occurrence_at).toMatch(/T04:00:00\.000Z$/);
    await h().shoot('campaign-recurring', { viewport: true, scrollTo: '#schedules-heading' });

    await item.locator('button:text-is("Pause")').click();
    await step(page.waitForSelector('[data-testid=recurring-schedules] .badge.paused'));
    await item.locator('button:text-is("Resume")').click();
    await step(page.waitForSelector('[data-testid=recurring-schedules] .badge.active'));
    await item.locator('button:text-is("Delete…")').click();
    await step(page.waitForSelector('dialog[open] h2:text-is("Delete this recurring schedule?")'));
    await page.click('dialog[open] button:text-is("Delete schedule")');
    await step(page.waitForSelector('[data-testid=recurring-schedules]', { state: 'detached' }));
    await waitFor(
      async () =>
        (await api<{ schedules: unknown[] }>('GET', `/api/v1/campaigns/${campaignId}/schedules`)).schedules.length ===
        0,
      { timeoutMs: 5000, what: 'the schedule deleted' },
    );
  });

  it('leaves no page error behind', () => {
    expect(h().pageLog.filter((line) => line.startsWith('page error'))).toEqual([]);
  });
});
