import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProviders, type FakeProviders } from '../../src/fake-providers/fake-providers.js';
import { systemClock } from '../../src/lib/clock.js';
import { createProject, type CreatedProject } from '../../src/projects/projects.service.js';
import { launchChromium } from '../browser/chromium.js';
import { freePort, REPO_ROOT, startServerProcess, type ServerProcess } from '../helpers/processes.js';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';

// The console (console/, served at /console by Herald itself) in a real Chromium against a real
// Herald process (API and worker) on each database, sending to the local FCM stand-in. Nothing in
// the page is replaced. With CONSOLE_SCREENSHOTS=1 the run also refreshes docs/console/*.png.

const SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS === '1' ? path.join(REPO_ROOT, 'docs/console') : null;
const DESKTOP = { width: 1280, height: 860 };
const PHONE = { width: 390, height: 844 };

describe.each(TEST_DIALECTS)('web console in Chromium, Herald on %s', (dialect) => {
  let fakes: FakeProviders;
  let database: TestDatabase;
  let project: CreatedProject;
  let herald: ServerProcess;
  let heraldUrl: string;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  const pageLog: string[] = [];
  /** Every URL the page requested: the key must be in none of them. */
  const requested: string[] = [];
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-console-'));
  const run = crypto.randomBytes(3).toString('hex');
  const ada = `ada-${run}`;

  const api = async (method: string, url: string, body?: unknown) => {
    const response = await fetch(`${heraldUrl}${url}`, {
      method,
      headers: {
        'X-Service-Project-ID': project.project_id,
        'X-Service-API-Key': project.secret_key,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${text}`);
    return (text ? JSON.parse(text) : {}) as Record<string, unknown> & {
      delivery_results: { message_id: string }[];
      segment: unknown;
    };
  };

  /** Runs a step; a failure carries the page's console and errors. */
  const step = async <T>(promise: Promise<T>): Promise<T> => {
    try {
      return await promise;
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${pageLog.join('\n')}`, { cause: error });
    }
  };

  const shoot = async (name: string) => {
    if (!SCREENSHOTS || dialect !== TEST_DIALECTS[0]) return;
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-desktop.png`), fullPage: true });
    await page.setViewportSize(PHONE);
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-phone.png`), fullPage: true });
    await page.setViewportSize(DESKTOP);
  };

  beforeAll(async () => {
    fakes = await startFakeProviders();
    const caFile = path.join(scratch, 'ca.pem');
    fs.writeFileSync(caFile, fakes.tls.caPem);
    database = await createTestDatabase(dialect);
    project = await createProject(database.db, systemClock, 'console');
    const port = await freePort();
    heraldUrl = `http://127.0.0.1:${port}`;
    herald = startServerProcess({
      ...database.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      HERALD_SECRET_KEY: crypto.randomBytes(32).toString('hex'),
      NODE_EXTRA_CA_CERTS: caFile,
      FCM_API_URL: fakes.fcm.url,
      OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true',
    });
    await waitFor(async () => (await fetch(`${heraldUrl}/readyz`)).ok, {
      timeoutMs: 60_000,
      intervalMs: 100,
      what: `Herald on ${heraldUrl}`,
    }).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}\n${herald.stderr()}`, { cause: error });
    });
    await api('PUT', '/api/v1/push-credentials/fcm', { service_account: fakes.fcm.serviceAccount(`fcm-${run}`) });

    browser = await launchChromium();
    page = await browser.context.newPage();
    await page.setViewportSize(DESKTOP);
    page.on('console', (message) => pageLog.push(`console.${message.type()}: ${message.text()}`));
    page.on('pageerror', (error) => pageLog.push(`page error: ${error.message}`));
    page.on('request', (request) => requested.push(request.url()));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    herald?.kill();
    await herald?.exited;
    await database?.destroy();
    await fakes?.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('is served by Herald with a strict CSP, cached assets and client routes', async () => {
    const index = await fetch(`${heraldUrl}/console/users/someone`);
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
    const asset = await fetch(`${heraldUrl}${script}`);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(asset.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect((await fetch(`${heraldUrl}/console/missing-file.js`)).status).toBe(404);
  });

  it(
    'signs in, finds a user made through the API, creates and previews a campaign, triggers it and sees it complete with its chart',
    { timeout: 120_000 },
    async () => {
      // Three users on the "pro" plan with FCM devices (one whose token the stand-in refuses as unregistered), one on "free".
      const users = [
        { id: ada, plan: 'pro', first_name: 'Ada', token: `ok-${run}-1` },
        { id: `grace-${run}`, plan: 'pro', first_name: 'Grace', token: `ok-${run}-2` },
        { id: `linus-${run}`, plan: 'pro', first_name: 'Linus', token: `unregistered-${run}` },
        { id: `free-${run}`, plan: 'free', first_name: 'Fred', token: `ok-${run}-3` },
      ];
      for (const user of users) {
        await api('POST', '/api/v1/users', {
          project_user_id: user.id,
          properties: { plan: user.plan, first_name: user.first_name },
        });
        await api('POST', '/api/v1/devices', { project_user_id: user.id, platform: 'android', fcm_token: user.token });
      }

      // Sign in with the keyboard only; the key lands in session storage, not in a cookie or the address.
      await page.goto(`${heraldUrl}/console/`);
      await page.waitForSelector('#project-id');
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

      // A wrong key is refused on the sign-in form.
      const other = await browser.context.newPage();
      await other.goto(`${heraldUrl}/console/`);
      await other.fill('#project-id', project.project_id);
      await other.fill('#secret-key', 'not-the-key');
      await other.click('button[type=submit]');
      await expect(other.locator('[role=alert]').textContent()).resolves.toMatch(/Invalid API key/);
      await other.close();

      // Users: by id prefix, then by condition; the user's page shows properties and devices.
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
      await shoot('users');
      await page.click(`a:text-is("${ada}")`);
      await step(page.waitForSelector(`h1:text-is("User ${ada}")`));
      await step(page.waitForSelector('h2:text-is("Devices (1)")'));
      expect(await page.textContent('main')).toContain('"Ada"');
      expect(await page.textContent('main')).toContain('Devices (1)');
      await shoot('user');

      // A campaign with a segment built in the condition builder and templates reading the user and the trigger.
      await page.click('nav >> text=Campaigns');
      await page.click('text=New campaign');
      await page.fill('#campaign-id', `spring-${run}`);
      await page.fill('#campaign-name', 'Spring sale');
      await page.selectOption('#campaign-status', 'active');
      await page.fill('#message-title', 'Hello {{ user.first_name }}');
      await page.fill('#message-body', 'Your code is {{ trigger.code }}');
      await page.click('fieldset:has(legend:text-is("Segment")) >> text=+ Property condition');
      await page.fill('#segment-0-property', 'plan');
      await page.fill('#segment-0-value', 'pro');
      await page.click('text=Create campaign');
      await step(page.waitForSelector('h1:text-is("Spring sale")'));
      const stored = await api('GET', `/api/v1/campaigns/spring-${run}`);
      expect(stored.segment).toEqual({ all: [{ property: 'plan', op: 'eq', value: 'pro' }] });

      // Live preview as Ada with a trigger property.
      await page.fill('#preview-properties', '{"code": "SPRING24"}');
      await page.fill('#preview-user', ada);
      await step(page.waitForSelector('.preview-title:text-is("Hello Ada")'));
      expect(await page.textContent('.preview-body')).toBe('Your code is SPRING24');

      // Dry run: the three "pro" users, nothing sent.
      const requestsBefore = fakes.fcm.recorder.total;
      await page.fill('#trigger-properties', '{"code": "SPRING24"}');
      await page.click('text=Dry run');
      await step(page.waitForSelector('[data-testid=dry-run]'));
      expect(await page.textContent('.audience-size')).toBe('3');
      expect(fakes.fcm.recorder.total).toBe(requestsBefore);
      await shoot('campaign');

      // Trigger: the page follows the stream until the trigger completes, then draws its chart.
      const stream = page.waitForRequest((request) => request.url().endsWith('/stream'));
      await page.click('text=Trigger now');
      // The progress stream is read with fetch, the key in its headers.
      expect((await stream).headers()['x-service-api-key']).toBe(project.secret_key);
      await step(page.waitForSelector('[data-testid=trigger-state]'));
      await step(page.waitForSelector('[data-testid=trigger-state]:text-is("completed")', { timeout: 60_000 }));
      expect(await page.textContent('[data-testid=accepted]')).toBe('2');
      await step(page.waitForSelector('[data-testid=sends-chart] rect.bar-sent'));
      await step(page.waitForSelector('.reasons >> text=UNREGISTERED'));
      await shoot('trigger');

      // Messages: one delivery looked up by its id.
      const sent = await api('POST', '/api/v1/messages:send', {
        push_notifications: [{ target: { project_user_id: ada }, title: 'Direct', body: 'hi' }],
      });
      const messageId = sent.delivery_results[0]!.message_id;
      await page.click('nav >> text=Messages');
      await page.fill('#message-id', messageId);
      await page.click('text=Look up');
      await step(page.waitForSelector('[data-testid=message]'));
      expect(await page.textContent('[data-testid=message]')).toContain(`user ${ada}`);
      await shoot('message');

      // Push credentials: FCM configured, and no secret anywhere on the page.
      await page.click('nav >> text=Push credentials');
      await step(page.waitForSelector('section[aria-label^="Firebase"] .badge:text-is("configured")'));
      expect(await page.content()).not.toContain('PRIVATE KEY');
      await shoot('credentials');

      // Signing out forgets the key.
      await page.click('text=Sign out');
      await page.waitForSelector('#secret-key');
      expect(await page.evaluate(() => JSON.stringify(sessionStorage))).not.toContain(project.secret_key);
      expect(pageLog.filter((line) => /Content Security Policy|page error/.test(line))).toEqual([]);
      expect(requested.length).toBeGreaterThan(10);
      expect(requested.filter((url) => url.includes(project.secret_key))).toEqual([]);
    },
  );
});
