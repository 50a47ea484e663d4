import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';
import { useConsoleHarness } from './console-harness.js';

// The send policy in the console, in a real Chromium against a real Herald process: the project
// settings (topics, caps, quiet hours), the campaign form's policy fields, a user's preferences, cap
// counters and held sends, and skipped sends in words with a link to the explanation. The steps build
// on each other: one project.

const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

describe.each(TEST_DIALECTS)('console: send policy, Herald on %s', (dialect) => {
  const h = useConsoleHarness(dialect, 'Policy app');
  const run = crypto.randomBytes(3).toString('hex');
  const ada = `ada-${run}`;
  const bob = `bob-${run}`;
  const promo = `promo-${run}`;
  const late = `late-${run}`;
  const url = (path: string) => `${h().heraldUrl}/console${path}`;
  const finished = (campaignId: string, triggerId: string) =>
    waitFor(
      async () =>
        (await h().api<{ state: string }>('GET', `/api/v1/campaigns/${campaignId}/triggers/${triggerId}`)).state ===
        'completed',
      { timeoutMs: 60_000, intervalMs: 200, what: `trigger ${triggerId} completed` },
    );
  const trigger = async (campaignId: string, users: string[]) => {
    const { trigger_id } = await h().api<{ trigger_id: string }>('POST', `/api/v1/campaigns/${campaignId}:trigger`, {
      audience: { targets: users.map((u) => ({ project_user_id: u })) },
    });
    await finished(campaignId, trigger_id);
    return trigger_id;
  };

  it('signs in and manages topics, caps and quiet hours on the settings page', async () => {
    const { page, project, api, step } = h();
    for (const id of [ada, bob]) {
      await api('POST', '/api/v1/users', { project_user_id: id, properties: {} });
      await api('POST', '/api/v1/devices', { project_user_id: id, platform: 'android', fcm_token: `ok-${id}` });
    }
    await api('PUT', '/api/v1/push-credentials/fcm', { service_account: h().fakes.fcm.serviceAccount(`fcm-${run}`) });
    await page.goto(url('/'));
    await page.fill('#project-id', project.project_id);
    await page.fill('#secret-key', project.secret_key);
    await page.press('#secret-key', 'Enter');
    await step(page.waitForSelector('nav[aria-label="Main"]'));
    await page.click('nav >> text=Settings');
    await step(page.waitForSelector('h1:text-is("Project settings")'));

    await page.fill('#topic-key', 'promotions');
    await page.fill('#topic-name', 'Promotions');
    await page.fill('#topic-description', 'Sales and offers');
    await page.click('button:text-is("Add topic")');
    await step(page.waitForSelector('[data-testid=topics] tr[data-key=promotions]'));
    await page.fill('#topic-key', 'news');
    await page.fill('#topic-name', 'Product news');
    await page.selectOption('#topic-default', 'false');
    await page.click('button:text-is("Add topic")');
    await step(page.waitForSelector('[data-testid=topics] tr[data-key=news]'));
    // Edited in place: the name changes, the key stays.
    await page.click('tr[data-key=news] button:text-is("Edit")');
    await page.fill('tr[data-key=news] input[aria-label=Name]', 'Product updates');
    await page.click('tr[data-key=news] button:text-is("Save")');
    await step(page.waitForSelector('tr[data-key=news]:has-text("Product updates")'));
    // A bad key is refused by Herald with its message.
    await page.fill('#topic-key', 'promotions');
    await page.fill('#topic-name', 'Again');
    await page.click('button:text-is("Add topic")');
    await step(page.waitForSelector('section[aria-labelledby=topics-heading] [role=alert]'));
    await page.fill('#topic-key', '');
    await page.fill('#topic-name', '');

    await page.click('button:text-is("+ Rule")');
    await page.fill('#cap-max-0', '1');
    await page.click('button:text-is("+ Rule")');
    await page.fill('#cap-max-1', '5');
    await page.selectOption('#cap-unit-1', 'hours');
    await page.fill('#cap-amount-1', '4');
    await page.fill('#cap-tag-1', 'promo');
    await page.click('button:text-is("Save caps")');
    await step(page.waitForSelector('[data-testid=caps-note]:text-is("Saved: 2 rules.")'));
    expect(await api('GET', '/api/v1/project/frequency-caps')).toEqual({
      rules: [
        { max: 1, per: 'day' },
        { max: 5, per: { hours: 4 }, tag: 'promo' },
      ],
    });

    await page.fill('#quiet-start', '22:00');
    await page.fill('#quiet-end', '07:30');
    await page.click('button:text-is("Save quiet hours")');
    await step(page.waitForSelector('[data-testid=quiet-note]:text-is("Saved: 22:00 to 07:30.")'));
    expect(await api('GET', '/api/v1/settings/quiet-hours')).toEqual({ quiet_hours: { start: '22:00', end: '07:30' } });
    await page.click('form[aria-labelledby=quiet-heading] button:text-is("Remove")');
    await step(page.waitForSelector('[data-testid=quiet-current]:has-text("none")'));
    expect(await api('GET', '/api/v1/settings/quiet-hours')).toEqual({ quiet_hours: null });
    await page.fill('#quiet-start', '22:00');
    await page.fill('#quiet-end', '07:30');

    // The preference page: a URL carrying Herald's `token` parameter is refused with Herald's message, an https
    // page is kept.
    await step(page.waitForSelector('[data-testid=prefpage-current]:text-is("Now: Herald’s page.")'));
    await page.fill('#prefpage-url', 'https://app.example.com/prefs?token=mine');
    await page.click('button:text-is("Save page")');
    await step(page.waitForSelector('form[aria-labelledby=prefpage-heading] [role=alert]'));
    await page.fill('#prefpage-url', 'https://app.example.com/account/notifications');
    await page.click('button:text-is("Save page")');
    await step(page.waitForSelector('[data-testid=prefpage-note]:text-is("Saved: links open your page.")'));
    expect(await api('GET', '/api/v1/settings/preference-page')).toEqual({
      url: 'https://app.example.com/account/notifications',
    });
    await h().shoot('settings');
    await page.click('button:text-is("Use Herald’s page")');
    await step(page.waitForSelector('[data-testid=prefpage-current]:text-is("Now: Herald’s page.")'));
    expect(await api('GET', '/api/v1/settings/preference-page')).toEqual({ url: null });
    await page.click('tr[data-key=promotions] button:text-is("Delete…")');
    await page.click('dialog[open] button:text-is("Cancel")');
  });

  it("edits a campaign's send policy in its form", async () => {
    const { page, api, step } = h();
    await api('POST', '/api/v1/campaigns', {
      campaign_id: promo,
      name: 'Weekly promo',
      status: 'active',
      api_triggered: true,
      message: { title: 'Deals', body: 'For you' },
    });
    await page.goto(url(`/campaigns/${promo}`));
    await step(page.waitForSelector('legend:text-is("Send policy")'));
    await page.selectOption('#policy-topic', 'promotions');
    await page.fill('#policy-tags', 'promo, weekly');
    await page.selectOption('#policy-reeligible', 'days');
    await page.fill('#policy-reeligible-after', '7');
    await page.selectOption('#policy-quiet', 'own');
    await page.fill('#policy-quiet-start', '21:00');
    await page.fill('#policy-quiet-end', '08:00');
    await page.fill('#policy-rate', '600');
    await page.uncheck('#policy-counts');
    await page.click('button:text-is("Save changes")');
    await step(page.waitForSelector('[data-testid=save-note]:has-text("Saved at")'));
    expect(await api('GET', `/api/v1/campaigns/${promo}`)).toMatchObject({
      topic: 'promotions',
      tags: ['promo', 'weekly'],
      critical: false,
      respect_caps: true,
      counts_toward_caps: false,
      reeligibility: { mode: 'window', seconds: 7 * 86_400 },
      quiet_hours: { start: '21:00', end: '08:00' },
      max_sends_per_minute: 600,
    });
    // What Herald stored is shown again (7 days, not 604800 seconds).
    expect(await page.inputValue('#policy-reeligible-after')).toBe('7');
    // A rate under the floor is stopped by the browser (no request); an empty window by Herald, with its message.
    await page.fill('#policy-rate', '5');
    expect(await page.locator('#policy-rate').evaluate((input: HTMLInputElement) => input.validity.valid)).toBe(false);
    await page.fill('#policy-rate', '600');
    await page.fill('#policy-quiet-end', '21:00');
    await page.click('button:text-is("Save changes")');
    await step(page.waitForSelector('form.panel [role=alert]:has-text("quiet_hours")'));
    expect(await api('GET', `/api/v1/campaigns/${promo}`)).toMatchObject({
      quiet_hours: { start: '21:00', end: '08:00' },
    });
    await page.fill('#policy-quiet-end', '08:00');
    await h().shoot('campaign-policy', { viewport: true, scrollTo: 'legend:text-is("Send policy")' });
    // Back to no topic, no quiet hours: the sends below go out now and count.
    await page.selectOption('#policy-topic', '');
    await page.selectOption('#policy-quiet', 'none');
    await page.check('#policy-counts');
    await page.selectOption('#policy-reeligible', 'always');
    await page.click('button:text-is("Save changes")');
    await step(page.waitForSelector('[data-testid=save-note]:has-text("Saved at")'));
    expect(await api('GET', `/api/v1/campaigns/${promo}`)).toMatchObject({ topic: null, quiet_hours: false });
  });

  it('shows capped sends in words and explains one gate by gate', async () => {
    const { page, step } = h();
    await trigger(promo, [ada, bob]);
    const capped = await trigger(promo, [ada, bob]);
    await page.goto(url(`/campaigns/${promo}/triggers/${capped}`));
    await step(page.waitForSelector('[data-testid=sends] tbody tr'));
    const reasons = await page.locator('[data-testid=sends] .reason-label').allTextContents();
    expect(reasons).toEqual(['frequency cap reached', 'frequency cap reached']);
    expect(await page.textContent('ul.skips')).toContain('frequency cap reached');
    await h().shoot('trigger-capped', { viewport: true, scrollTo: '#sends-heading' });

    // The real explanation endpoint: ada's second send of the day hit the cap.
    const asked = page.waitForRequest('**/eligibility?*');
    await page.click(`[data-testid=sends] tr:has(a:text-is("${ada}")) a:text-is("Why?")`);
    await step(page.waitForSelector('h1:text-is("Why was this not sent?")'));
    await step(page.waitForSelector('[data-testid=gates] tbody tr'));
    expect((await asked).url()).toContain(
      `/api/v1/campaigns/${promo}/eligibility?project_user_id=${ada}&trigger_id=${capped}`,
    );
    const rows = page.locator('[data-testid=gates] tbody tr');
    expect(await rows.count()).toBe(9);
    expect(await page.getAttribute('tr[data-gate=frequency_caps]', 'data-verdict')).toBe('fail');
    expect(await page.textContent('tr[data-gate=frequency_caps]')).toContain('Frequency caps');
    expect(await page.textContent('[data-testid=eligible]')).toContain('would not receive');
    await h().shoot('eligibility');
  });

  it("shows a user's preferences (editable), cap counters and held sends", async () => {
    const { page, api, step } = h();
    const now = Date.now();
    await api('POST', '/api/v1/campaigns', {
      campaign_id: late,
      name: 'Late reminder',
      status: 'active',
      api_triggered: true,
      critical: false,
      respect_caps: false,
      quiet_hours: { start: hhmm(now - 5 * 60_000), end: hhmm(now + 90 * 60_000) },
      message: { title: 'Hello', body: 'Later' },
    });
    await trigger(late, [ada]);
    await page.goto(url(`/users/${ada}`));
    await step(page.waitForSelector('[data-testid=preferences]'));
    await step(page.waitForSelector('[data-testid=cap-counters] tbody tr'));
    const counters = page.locator('[data-testid=cap-counters] tbody tr');
    expect(await counters.first().textContent()).toContain('1 / 1');
    expect(await counters.first().getAttribute('data-full')).toBe('true');
    await step(page.waitForSelector('[data-testid=held-sends] tr[data-state=held]'));
    expect(await page.textContent('[data-testid=held-sends] tbody')).toContain(late);

    await page.uncheck('label[data-topic=promotions] input');
    await page.check('label[data-topic=news] input');
    await page.click('button:text-is("Save preferences")');
    await step(page.waitForSelector('[data-testid=preferences-note]:text-is("Saved.")'));
    expect(await api('GET', `/api/v1/users/${ada}/preferences`)).toMatchObject({
      campaign_pushes: 'subscribed',
      topics: { promotions: 'unsubscribed', news: 'subscribed' },
    });
    await h().shoot('user-policies', { scrollTo: '#preferences-heading' });
  });

  it('leaves no page error behind', () => {
    expect(h().pageLog.filter((line) => line.startsWith('page error'))).toEqual([]);
  });
});
