import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HERALD_VERSION } from '../../src/lib/package-info.js';
import { startServerProcess, type ServerProcess } from '../helpers/processes.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/wait-for.js';
import { launchChromium } from './chromium.js';

// The API reference at /docs works with no network but Herald's own: the page loads in Chromium with
// every request to another host refused, and nothing fails or is even attempted. It is Herald's page
// (its title and version), with none of the vendor's buttons, and its authentication panel starts
// on Herald's two headers. The page serves no data, so one database (the embedded one) is enough.

const VENDOR_CONTROLS = [
  'Deploy',
  'Ask AI',
  'Generate SDK',
  'Generate MCP',
  'Share',
  'Configure',
  'Developer Tools',
  'Powered by Scalar',
];

describe('the API reference at /docs in Chromium', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-docs-'));
  let herald: ServerProcess;
  let base: string;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Page;
  const elsewhere: string[] = [];
  const failed: string[] = [];
  const errorAnswers: string[] = [];

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    herald = startServerProcess({ PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
    await waitFor(async () => (await fetch(`${base}/readyz`)).ok, { what: 'Herald ready', timeoutMs: 30_000 });
    browser = await launchChromium();
    // Every request that leaves Herald's origin is refused and recorded; Herald's own go through.
    await browser.context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(`${base}/`) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
      elsewhere.push(url);
      return route.abort('internetdisconnected');
    });
    page = await browser.context.newPage();
    page.on('requestfailed', (request) => failed.push(`${request.url()} ${request.failure()?.errorText ?? ''}`));
    page.on('response', (response) => {
      if (response.status() >= 400) errorAnswers.push(`${response.status()} ${response.url()}`);
    });
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${base}/docs`, { waitUntil: 'networkidle' });
    await page.getByRole('heading', { name: 'Herald', exact: true }).waitFor();
  });

  afterAll(async () => {
    await browser?.close();
    herald?.kill();
    await herald?.exited;
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('makes no request outside Herald, and none fails', async () => {
    // Open an operation and its test-request client too: the parts of the page that load on demand.
    await page
      .getByRole('button', { name: /Test Request/ })
      .first()
      .click();
    await page.getByRole('button', { name: /Send/ }).first().waitFor();
    await page.waitForLoadState('networkidle');
    expect(elsewhere).toEqual([]);
    expect(failed).toEqual([]);
    expect(errorAnswers).toEqual([]);
    await page.keyboard.press('Escape');
  });

  it("is titled with Herald's name and its package version, the version /openapi.json states", async () => {
    expect(await page.title()).toBe(`Herald API ${HERALD_VERSION}`);
    await expect(page.getByText(`v${HERALD_VERSION}`, { exact: true }).first().isVisible()).resolves.toBe(true);
    const document = (await (await fetch(`${base}/openapi.json`)).json()) as { info: { version: string } };
    expect(document.info.version).toBe(HERALD_VERSION);
  });

  it("shows none of the vendor's buttons or links", async () => {
    const visible: string[] = [];
    for (const control of await page.locator('button, a, [role=button]').all())
      if (await control.isVisible()) visible.push((await control.innerText()).replace(/\s+/g, ' ').trim());
    expect(visible.length).toBeGreaterThan(10); // the page did render its navigation
    for (const name of VENDOR_CONTROLS) expect(visible.filter((text) => text.includes(name))).toEqual([]);
  });

  it("starts the authentication panel on Herald's two headers", async () => {
    const panel = page.locator('.scalar-app').first();
    await expect(panel.getByText('X-Service-Project-ID').first().isVisible()).resolves.toBe(true);
    await expect(panel.getByText('X-Service-API-Key').first().isVisible()).resolves.toBe(true);
    await expect(page.getByText('No authentication selected').count()).resolves.toBe(0);
  });
});
