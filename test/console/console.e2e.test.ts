import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';
import { boxOf, PHONE, DESKTOP, settled, useConsoleHarness } from './console-harness.js';

// The console (console/, served at /console by Herald itself) in a real Chromium against a real
// Herald process (API and worker) on each database, sending to the local FCM stand-in. Nothing in
// the page is replaced. The steps run in order and build on each other: one project, one campaign.

describe.each(TEST_DIALECTS)('web console in Chromium, Herald on %s', (dialect) => {
  const h = useConsoleHarness(dialect, 'Shop app');
  const run = crypto.randomBytes(3).toString('hex');
  const ada = `ada-${run}`;
  const campaignId = `spring-${run}`;
  const campaignPath = `/console/campaigns/${campaignId}`;
  let firstTrigger = '';

  it('is served by Herald with a strict CSP, cached assets and client routes', async () => {
    const index = await fetch(`${h().heraldUrl}/console/users/someone`);
    expect(index.status).toBe(200);
    const csp = index.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toContain('unsafe');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    const html = await index.text();
    const script = /src="(\/console\/app-[A-Z0-9]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${h().heraldUrl}${script}`);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(asset.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect((await fetch(`${h().heraldUrl}/console/missing-file.js`)).status).toBe(404);
  });

  it('signs in with the keyboard, keeps the key out of cookies and addresses, and names the project', async () => {
    const { page, project, step } = h();
    await page.goto(`${h().heraldUrl}/console/`);
    await page.waitForSelector('#project-id');
    await h().shoot('sign-in');
    await page.focus('#project-id');
    await page.keyboard.type(project.project_id);
    await page.keyboard.press('Tab');
    await page.keyboard.type(project.secret_key);
    await page.keyboard.press('Enter');
    await step(page.waitForSelector('nav[aria-label="Main"]'));
    // Keyboard: the first stop is the skip link, then the navigation.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Users');
    expect(await page.evaluate(() => document.cookie)).toBe('');
    expect(page.url()).not.toContain(project.secret_key);
    expect(await page.evaluate(() => JSON.stringify(sessionStorage))).toContain(project.secret_key);
    expect(await page.evaluate(() => JSON.stringify(localStorage))).not.toContain(project.secret_key);
    // The header names the project (its id is the small print under it); so does the tab's title.
    await step(page.waitForSelector('[data-testid=project-name]:has-text("Shop app")'));
    expect(await page.textContent('[data-testid=project-name] .project-id')).toBe(project.project_id);
    await waitFor(async () => (await page.title()) === 'Users · Shop app', { timeoutMs: 5000, what: 'the title' });

    // A wrong key is refused on the sign-in form.
    const other = await h().browser.context.newPage();
    await other.goto(`${h().heraldUrl}/console/`);
    await other.fill('#project-id', project.project_id);
    await other.fill('#secret-key', 'not-the-key');
    await other.click('button[type=submit]');
    await expect(other.locator('[role=alert]').textContent()).resolves.toMatch(/Invalid API key/);
    await other.close();
  });

  it("finds users, and a user's page shows devices with readable headers and local times, on a phone too", async () => {
    const { page, api, step } = h();
    // On the "pro" plan: three with FCM devices (one the stand-in refuses as unregistered), one without a
    // device, one who muted campaigns; one on "free".
    const users = [
      { id: ada, plan: 'pro', first_name: 'Ada', token: `ok-${run}-1` },
      { id: `grace-${run}`, plan: 'pro', first_name: 'Grace', token: `ok-${run}-2` },
      { id: `linus-${run}`, plan: 'pro', first_name: 'Linus', token: `unregistered-${run}` },
      { id: `nora-${run}`, plan: 'pro', first_name: 'Nora' },
      { id: `mia-${run}`, plan: 'pro', first_name: 'Mia', muted: 'yes', token: `ok-${run}-4` },
      { id: `free-${run}`, plan: 'free', first_name: 'Fred', token: `ok-${run}-3` },
    ];
    for (const { id, token, ...properties } of users) {
      await api('POST', '/api/v1/users', { project_user_id: id, properties });
      if (token) await api('POST', '/api/v1/devices', { project_user_id: id, platform: 'android', fcm_token: token });
    }
    await api('POST', '/api/v1/events', {
      project_user_id: ada,
      name: 'order_completed',
      properties: { total: 42.5, currency: 'EUR' },
    });
    await api('PUT', '/api/v1/push-credentials/fcm', { service_account: h().fakes.fcm.serviceAccount(`fcm-${run}`) });

    await page.fill('#user-prefix', ada.slice(0, 6));
    await page.click('form[role=search] button[type=submit]');
    await step(page.waitForSelector(`a:text-is("${ada}")`));
    await page.fill('#user-prefix', '');
    await page.click('text=+ Property condition');
    await page.fill('#user-filter-0-property', 'plan');
    await page.fill('#user-filter-0-value', 'free');
    await page.click('form[role=search] button[type=submit]');
    await step(page.waitForSelector(`a:text-is("free-${run}")`));
    expect(await page.locator('tbody tr').count()).toBe(1);
    await page.fill('#user-filter-0-value', 'pro');
    await page.click('form[role=search] button[type=submit]');
    await step(page.waitForSelector(`a:text-is("${ada}")`));
    await h().shoot('users');

    await page.click(`a:text-is("${ada}")`);
    await step(page.waitForSelector(`h1:text-is("User ${ada}")`));
    await step(page.waitForSelector('h2:text-is("Devices (1)")'));
    expect(await page.textContent('main')).toContain('"Ada"');
    const headers = await page.locator('[data-testid=devices] th').allTextContents();
    expect(headers).toEqual(['Platform', 'Status', 'Provider', 'Registered', 'Device id']);
    // Times as the other pages show them (the browser's locale), never raw ISO text; headers in words.
    expect(await page.textContent('main')).not.toMatch(/\d{4}-\d\d-\d\dT/);
    expect(await page.locator('main th').allTextContents()).not.toContainEqual(expect.stringMatching(/_/));
    await step(page.waitForSelector('h2:text-is("Recent events (1)")'));
    expect(await page.textContent('main')).toContain('order_completed');
    // The messages load on their own: waited for, not read at once.
    await step(page.waitForSelector('main p:text-is("No messages sent to this user.")'));

    // On a phone every device field stays on screen: the table becomes one labelled card per device.
    await page.setViewportSize(PHONE);
    await settled(page);
    for (const cell of ['td.platform', 'td.status']) {
      const box = await boxOf(page, `[data-testid=devices] ${cell}`);
      expect(box.x, cell).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width, cell).toBeLessThanOrEqual(PHONE.width);
    }
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await page.setViewportSize(DESKTOP);
  });

  it('creates a campaign; a paused campaign stays paused through two saves, each confirmed', async () => {
    const { page, api, step } = h();
    await page.click('nav >> text=Campaigns');
    await page.click('text=New campaign');
    await page.fill('#campaign-id', campaignId);
    await page.fill('#campaign-name', 'Spring sale');
    await page.selectOption('#campaign-status', 'active');
    await page.fill('#message-title', 'Hello {{ user.first_name }}');
    await page.fill('#message-body', 'Your code is {{ trigger.code }}');
    await page.click('fieldset:has(legend:text-is("Segment")) >> text=+ Property condition');
    await page.fill('#segment-0-property', 'plan');
    await page.fill('#segment-0-value', 'pro');
    await page.click('fieldset:has(legend:text-is("Audience conditions")) >> text=+ Property condition');
    await page.fill('#audience-0-property', 'muted');
    await page.selectOption('#audience-0-op', 'ne');
    await page.fill('#audience-0-value', 'yes');
    await h().shoot('campaign-new');
    await page.click('text=Create campaign');
    await step(page.waitForSelector('h1:text-is("Spring sale")'));
    const stored = await api<{ segment: unknown; audience_conditions: unknown }>(
      'GET',
      `/api/v1/campaigns/${campaignId}`,
    );
    expect(stored.segment).toEqual({ all: [{ property: 'plan', op: 'eq', value: 'pro' }] });
    expect(stored.audience_conditions).toEqual({ all: [{ property: 'muted', op: 'ne', value: 'yes' }] });

    // Pause and save: the form shows what was stored, and says it saved.
    await page.selectOption('#campaign-status', 'paused');
    await page.click('text=Save changes');
    await step(page.waitForSelector('[data-testid=save-note]:has-text("Saved at")'));
    expect(await page.textContent('[data-testid=save-note]')).toContain('status paused');
    expect(await page.inputValue('#campaign-status')).toBe('paused');
    expect((await api<{ status: string }>('GET', `/api/v1/campaigns/${campaignId}`)).status).toBe('paused');
    // Only an active campaign can be triggered; the panel says so and the button is off.
    expect(await page.isDisabled('button:text-is("Trigger now…")')).toBe(true);
    // An edit takes the confirmation away (it no longer describes the form); a second save keeps the status.
    await page.fill('#message-body', 'Your code: {{ trigger.code }}');
    await step(page.waitForSelector('[data-testid=save-note]:empty', { state: 'attached' }));
    await page.click('text=Save changes');
    await step(page.waitForSelector('[data-testid=save-note]:has-text("Saved at")'));
    const twice = await api<{ status: string; message: { body: string } }>('GET', `/api/v1/campaigns/${campaignId}`);
    expect(twice).toMatchObject({ status: 'paused', message: { body: 'Your code: {{ trigger.code }}' } });
    expect(await page.inputValue('#campaign-status')).toBe('paused');

    await page.selectOption('#campaign-status', 'active');
    await page.click('text=Save changes');
    await step(page.waitForSelector('[data-testid=save-note]:has-text("status active")'));
    expect(await page.isDisabled('button:text-is("Trigger now…")')).toBe(false);
  });

  it('edits a condition as JSON in a roomy editor', async () => {
    const { page, step } = h();
    await page.click('fieldset:has(legend:text-is("Segment")) >> text=Edit as JSON');
    const editor = await step(page.waitForSelector('#segment-json'));
    const fieldset = await boxOf(page, 'fieldset.condition:has(#segment-json)');
    const box = (await editor.boundingBox())!;
    expect(box.width).toBeGreaterThan(fieldset.width * 0.85);
    expect(box.height).toBeGreaterThan(180);
    expect(JSON.parse(await page.inputValue('#segment-json'))).toEqual({
      all: [{ property: 'plan', op: 'eq', value: 'pro' }],
    });
    await page.click('fieldset:has(legend:text-is("Segment")) >> text=Use the builder');
    await step(page.waitForSelector('#segment-0-property'));
  });

  it('previews and dry-runs with one set of trigger properties, in words, and drops a stale count', async () => {
    const { page, step, fakes } = h();
    // One properties field serves the preview, the dry run and the trigger.
    expect(await page.locator('textarea#trigger-properties').count()).toBe(1);
    expect(await page.locator('#preview-properties').count()).toBe(0);
    await page.fill('#trigger-properties', '{"code": "SPRING24"}');
    await page.fill('#preview-user', ada);
    await step(page.waitForSelector('.preview-title:text-is("Hello Ada")'));
    expect(await page.textContent('.preview-body')).toBe('Your code: SPRING24');

    // The audience choices say what they mean.
    const hints = await page.locator('.choice .hint').allTextContents();
    expect(hints[0]).toContain('everyone in the segment');
    expect(hints[1]).toMatch(/Every user who matches the segment and the audience conditions/);

    // Dry run: five "pro" users, one muted, one without a device: three would receive it, nothing sent.
    const requestsBefore = fakes.fcm.recorder.total;
    await page.click('button:text-is("Dry run")');
    const result = await step(page.waitForSelector('[data-testid=dry-run]'));
    expect(await page.textContent('.audience-size')).toBe('3');
    const words = (await result.textContent()) ?? '';
    expect(words).toContain('3 users would receive it, on 3 devices.');
    expect(words).toContain('5 users are in the segment.');
    expect(words).toContain('1 excluded by the audience conditions');
    expect(words).toContain('1 no active device');
    expect(words).not.toMatch(/audience_conditions|no_device/);
    expect(fakes.fcm.recorder.total).toBe(requestsBefore);
    await h().shoot('campaign');

    // A count of other input does not stay under an error: it goes as the input changes.
    await page.fill('#trigger-properties', '{"code": ');
    await page.click('button:text-is("Dry run")');
    await step(page.waitForSelector('[role=alert]:has-text("Trigger properties is not valid JSON")'));
    expect(await page.locator('[data-testid=dry-run]').count()).toBe(0);
    await page.fill('#trigger-properties', '{"code": "SPRING24"}');
  });

  it('asks before it sends, then follows the trigger to completion with its name, sends and message ids', async () => {
    const { page, api, step, fakes, project } = h();
    const requestsBefore = fakes.fcm.recorder.total;
    await page.click('button:text-is("Trigger now…")');
    await step(page.waitForSelector('dialog[open] h2:text-is("Send “Spring sale” now?")'));
    await step(page.waitForSelector('dialog[open] [data-testid=confirm-count] .audience-size:text-is("3")'));
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    await h().shoot('trigger-confirm', { viewport: true });
    await page.click('dialog[open] >> text=Cancel');
    await step(page.waitForSelector('dialog[open]', { state: 'detached' }));
    expect(await api<{ triggers: unknown[] }>('GET', `/api/v1/campaigns/${campaignId}/triggers`)).toMatchObject({
      triggers: [],
    });
    expect(fakes.fcm.recorder.total).toBe(requestsBefore);

    const stream = page.waitForRequest((request) => request.url().endsWith('/stream'));
    await page.click('button:text-is("Trigger now…")');
    await page.click('dialog[open] >> text=Send now');
    // The progress stream is read with fetch, the key in its headers.
    expect((await stream).headers()['x-service-api-key']).toBe(project.secret_key);
    await step(page.waitForSelector('[data-testid=trigger-state][data-state=completed]', { timeout: 60_000 }));
    firstTrigger = page.url().split('/triggers/')[1]!;
    const status = await api('GET', `/api/v1/campaigns/${campaignId}/triggers/${firstTrigger}`);
    // Two accepted, one refused as unregistered: a success with failures, not a plain green "completed".
    expect(status, 'the trigger as the API reports it').toMatchObject({ counters: { accepted: 2, failed: 1 } });
    expect(await page.textContent('[data-testid=accepted]')).toBe('2');
    expect(await page.textContent('[data-testid=trigger-state]')).toBe('completed: 1 of 3 sends failed');
    expect(await page.getAttribute('[data-testid=trigger-state]', 'class')).toContain('warn');
    // A finished trigger has nothing left to cancel, and was never scheduled.
    expect(await page.locator('button:text-is("Cancel trigger…")').count()).toBe(0);
    expect(await page.locator('[data-testid=scheduled-at]').count()).toBe(0);
    expect(await page.locator('#trigger-progress').count()).toBe(1);
    // Named by its campaign and time, not by a UUID; the breadcrumb names the campaign.
    const title = (await page.textContent('h1')) ?? '';
    expect(title).toMatch(/^Spring sale: trigger of /);
    expect(title).not.toContain(firstTrigger);
    expect(await page.textContent('.crumbs')).toContain('Spring sale');
    expect(await page.textContent('.crumbs')).not.toContain(campaignId);
    await step(page.waitForSelector('[data-testid=sends-chart] rect.bar-sent'));
    // The refused send is drawn as failed; nothing was skipped (a skip is drawn apart, not as a failure).
    expect(await page.textContent('[data-testid=sends-chart] desc')).toMatch(/2 sent, 1 failed and 0 skipped in all/);
    expect(await page.textContent('.chart figcaption')).toMatch(/sent\s+failed\s+skipped/);
    await step(page.waitForSelector('.reasons >> text=UNREGISTERED'));
    // Skips in words.
    expect(await page.textContent('main')).toContain('1 excluded by the audience conditions');
    await step(page.waitForSelector(`[data-testid=sends] a:text-is("${ada}")`));
    expect(await page.locator('[data-testid=sends] tbody tr').count()).toBe(3);
    await h().shoot('trigger');

    // A message id of the trigger opens the message.
    const adaRow = page.locator(`[data-testid=sends] tr:has(a:text-is("${ada}"))`);
    const messageId = (await adaRow.locator('a[href*="/messages?id="]').textContent())!;
    await adaRow.locator('a[href*="/messages?id="]').click();
    await step(page.waitForSelector('[data-testid=message]'));
    expect(await page.textContent('[data-testid=message]')).toContain(firstTrigger);
    expect(page.url()).toContain(messageId);
  });

  it("reaches a user's messages from the user's page", async () => {
    const { page, api, step } = h();
    const sent = await api<{ delivery_results: { message_id: string }[] }>('POST', '/api/v1/messages:send', {
      push_notifications: [{ target: { project_user_id: ada }, title: 'Direct', body: 'hi' }],
    });
    const direct = sent.delivery_results[0]!.message_id;
    await page.goto(`${h().heraldUrl}/console/users/${ada}`);
    await step(page.waitForSelector('[data-testid=user-messages]'));
    // Messages sent to the user's id; the campaign's (addressed to devices) are on the trigger's page.
    const rows = page.locator('[data-testid=user-messages] tbody tr');
    expect(await rows.count()).toBe(1);
    expect(await page.textContent('main')).toContain("A campaign's sends are listed on each of its triggers' pages.");
    await h().shoot('user');
    await page.click(`[data-testid=user-messages] a:text-is("${direct}")`);
    await step(page.waitForSelector('[data-testid=message]'));
    expect(await page.inputValue('#message-id')).toBe(direct);
    expect(await page.textContent('[data-testid=message]')).toContain('accepted');
    await h().shoot('message');
    // The page without an id says where ids are found.
    await page.click('nav >> text=Messages');
    await step(page.waitForSelector("text=Message ids are listed on each user's page"));
  });

  it('marks a trigger whose every send failed as failed, and links its credentials failure', async () => {
    const { page, api, step, fakes } = h();
    // Credentials whose account the FCM stand-in does not know: the token exchange fails, every send with it.
    const account = {
      ...fakes.fcm.serviceAccount(`fcm-${run}`),
      client_email: `gone-${run}@example.iam.gserviceaccount.com`,
    };
    await api('PUT', '/api/v1/push-credentials/fcm', { service_account: account });
    await page.goto(`${h().heraldUrl}${campaignPath}`);
    await page.fill('#trigger-properties', '{"code": "SPRING24"}');
    await page.click('button:text-is("Trigger now…")');
    await page.click('dialog[open] >> text=Send now');
    await step(page.waitForSelector('[data-testid=trigger-state][data-state=completed]', { timeout: 60_000 }));
    // Two devices left: the first trigger pruned the unregistered one.
    expect(await page.textContent('[data-testid=failed]')).toBe('2');
    expect(await page.textContent('[data-testid=trigger-state]')).toBe('completed: all 2 sends failed');
    const badge = (await page.getAttribute('[data-testid=trigger-state]', 'class')) ?? '';
    expect(badge).toContain('failed');
    expect(badge).not.toContain('completed');
    await step(page.waitForSelector('[data-testid=credentials-note]:has-text("2 sends were refused")'));
    // The reason links to the credentials page, in the reasons and in each send.
    await step(page.waitForSelector('.reasons a:text-is("OAUTH_INVALID_CLIENT")'));
    expect(await page.locator('[data-testid=sends] a:text-is("OAUTH_INVALID_CLIENT")').count()).toBe(2);
    await h().shoot('trigger-failed');
    await page.click('.reasons a:text-is("OAUTH_INVALID_CLIENT")');
    await step(page.waitForSelector('h1:text-is("Push credentials")'));
    await step(page.waitForSelector('section[aria-label^="Firebase"] .error:has-text("OAUTH_INVALID_CLIENT")'));
    // The page says what the code means and what to do.
    expect(await page.textContent('section[aria-label^="Firebase"] [data-testid=credentials-problem]')).toContain(
      'does not know this service account or its key',
    );
  });

  it('schedules a trigger at a local time, shows it scheduled with its time, and cancels it after asking', async () => {
    const { page, api, step, fakes } = h();
    const requestsBefore = fakes.fcm.recorder.total;
    await page.goto(`${h().heraldUrl}${campaignPath}`);
    await page.fill('#trigger-properties', '{"code": "SPRING24"}');
    await page.check('input[name=when][value=schedule]');
    expect(await page.textContent('button:text-is("Schedule…")')).toBe('Schedule…');
    // Tomorrow at 09:30 on the browser's clock, in its zone (+05:30): the instant is 04:00 UTC.
    const tomorrow = await page.evaluate(() => {
      const d = new Date(Date.now() + 86_400_000);
      const two = (n: number) => String(n).padStart(2, '0');
      return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
    });
    await page.fill('#trigger-at', `${tomorrow}T09:30`);
    expect(await page.textContent('[data-testid=send-time]')).toContain(`(${tomorrow}T09:30:00+05:30)`);
    const expectedAt = new Date(`${tomorrow}T04:00:00Z`).toISOString();
    // A cleared input is refused in the panel, before any request.
    await page.fill('#trigger-at', '');
    expect(await page.textContent('[data-testid=send-time]')).toBe('Choose a date and time to send.');
    await page.click('button:text-is("Schedule…")');
    await step(page.waitForSelector('[role=alert]:has-text("Choose a date and time to send")'));
    expect(await page.locator('dialog[open]').count()).toBe(0);
    await page.fill('#trigger-at', `${tomorrow}T09:30`);
    await page.locator('#trigger-at').blur();
    await h().shoot('campaign-schedule', { viewport: true, scrollTo: '#trigger-heading' });

    await page.click('button:text-is("Schedule…")');
    await step(page.waitForSelector('dialog[open] h2:text-is("Schedule “Spring sale”?")'));
    // Shown as the other pages show times: the browser's locale and zone.
    const shownAt = await page.evaluate((at) => new Date(at).toLocaleString(), expectedAt);
    expect(await page.textContent('dialog[open]')).toContain(`at ${shownAt}.`);
    await h().shoot('trigger-schedule-confirm', { viewport: true });
    const triggered = page.waitForRequest((request) => request.url().endsWith(':trigger'));
    await page.click('dialog[open] button:text-is("Schedule")');
    expect((await triggered).postDataJSON()).toMatchObject({
      properties: { code: 'SPRING24' },
      schedule: { at: `${tomorrow}T09:30:00+05:30` },
    });
    await step(page.waitForSelector('[data-testid=trigger-state][data-state=scheduled]'));
    const triggerId = page.url().split('/triggers/')[1]!;
    const status = await api('GET', `/api/v1/campaigns/${campaignId}/triggers/${triggerId}`);
    expect(status, 'the trigger as the API reports it').toMatchObject({ state: 'scheduled', scheduled_at: expectedAt });
    expect(await page.textContent('[data-testid=trigger-state]')).toBe('scheduled');
    expect(await page.getAttribute('[data-testid=scheduled-at] time', 'datetime')).toBe(expectedAt);
    expect(await page.textContent('[data-testid=scheduled-at]')).toBe(`Sends at ${shownAt}.`);
    // Nothing planned yet: no batch progress.
    expect(await page.locator('#trigger-progress').count()).toBe(0);
    await h().shoot('trigger-scheduled');

    // Cancel asks first; dismissing it leaves the trigger scheduled.
    await page.click('button:text-is("Cancel trigger…")');
    await step(page.waitForSelector('dialog[open] h2:text-is("Cancel this scheduled trigger?")'));
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    await page.click('dialog[open] button:text-is("Cancel")');
    await step(page.waitForSelector('dialog[open]', { state: 'detached' }));
    expect(await api('GET', `/api/v1/campaigns/${campaignId}/triggers/${triggerId}`)).toMatchObject({
      state: 'scheduled',
    });

    await page.click('button:text-is("Cancel trigger…")');
    await page.click('dialog[open] button:text-is("Cancel trigger")');
    await step(page.waitForSelector('[data-testid=trigger-state][data-state=canceled]'));
    expect(await page.textContent('[data-testid=trigger-state]')).toBe('canceled');
    expect(await page.textContent('[data-testid=scheduled-at]')).toMatch(/^Was scheduled for /);
    expect(await page.locator('#trigger-progress').count()).toBe(0);
    expect(await page.textContent('[data-testid=accepted]')).toBe('0');
    expect(await page.textContent('[data-testid=failed]')).toBe('0');
    expect(await page.locator('button:text-is("Cancel trigger…")').count()).toBe(0);
    expect(await api('GET', `/api/v1/campaigns/${campaignId}/triggers/${triggerId}`)).toMatchObject({
      state: 'canceled',
      error: 'canceled by request',
      counters: { accepted: 0, failed: 0 },
    });
    expect(fakes.fcm.recorder.total).toBe(requestsBefore);
    await h().shoot('trigger-canceled');
  });

  it('shows push credentials without secrets, and whether identity verification is on', async () => {
    const { page, api, step } = h();
    await page.click('nav >> text=Users'); // then back, so the page loads afresh
    await page.click('nav >> text=Push credentials');
    await step(page.waitForSelector('[data-testid=identity-verification] .badge:text-is("off")'));
    expect(await page.textContent('[data-testid=identity-verification]')).toContain('Anyone holding the public key');
    expect(await page.content()).not.toContain('PRIVATE KEY');
    await api('PUT', '/api/v1/identity-verification');
    await page.click('nav >> text=Users');
    await page.click('nav >> text=Push credentials');
    await step(page.waitForSelector('[data-testid=identity-verification] .badge:text-is("on")'));
    await h().shoot('credentials');
  });

  it('keeps chart labels readable on a phone', async () => {
    const { page, step } = h();
    await page.goto(`${h().heraldUrl}${campaignPath}/triggers/${firstTrigger}`);
    await step(page.waitForSelector('[data-testid=sends-chart] text.axis'));
    await page.setViewportSize(PHONE);
    await settled(page);
    const heights = await page.$$eval('[data-testid=sends-chart] text.axis', (texts) =>
      texts.map((t) => t.getBoundingClientRect().height),
    );
    expect(Math.min(...heights)).toBeGreaterThanOrEqual(11);
    // The sends become cards too: user and outcome on screen.
    const outcome = await boxOf(page, '[data-testid=sends] td[data-label=Outcome]');
    expect(outcome.x + outcome.width).toBeLessThanOrEqual(PHONE.width);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await page.setViewportSize(DESKTOP);
    await page.click('nav >> text=Campaigns');
    await step(page.waitForSelector('a:text-is("Spring sale")'));
    await h().shoot('campaigns');
  });

  it('signs out and forgets the key; no page error, no CSP report, no key in any address', async () => {
    const { page, project, pageLog, requested } = h();
    await page.click('text=Sign out');
    await page.waitForSelector('#secret-key');
    expect(await page.evaluate(() => JSON.stringify(sessionStorage))).not.toContain(project.secret_key);
    expect(pageLog.filter((line) => /Content Security Policy|page error/.test(line))).toEqual([]);
    expect(requested.length).toBeGreaterThan(10);
    expect(requested.filter((url) => url.includes(project.secret_key))).toEqual([]);
  });
});
