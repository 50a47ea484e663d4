import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import type { Dialect } from '../../src/db/dialect.js';
import { startFakeProviders, type FakeProviders } from '../../src/fake-providers/fake-providers.js';
import { systemClock } from '../../src/lib/clock.js';
import { createProject, type CreatedProject } from '../../src/projects/projects.service.js';
import { launchChromium } from '../browser/chromium.js';
import { REPO_ROOT, startServerProcess, type ServerProcess } from '../helpers/processes.js';
import { freePort } from '../helpers/ports.js';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';

// A real Herald process (API and worker) on a fresh database, the local FCM stand-in, and a headless
// Chromium signed in to nothing yet. With CONSOLE_SCREENSHOTS=1 `shoot` refreshes docs/console/*.png
// (or writes to CONSOLE_SCREENSHOTS_DIR).

const SCREENSHOTS =
  process.env.CONSOLE_SCREENSHOTS === '1'
    ? (process.env.CONSOLE_SCREENSHOTS_DIR ?? path.join(REPO_ROOT, 'docs/console'))
    : null;
export const DESKTOP = { width: 1280, height: 860 };
export const PHONE = { width: 390, height: 844 };

export interface ConsoleHarness {
  dialect: Dialect;
  fakes: FakeProviders;
  project: CreatedProject;
  heraldUrl: string;
  page: Page;
  browser: Awaited<ReturnType<typeof launchChromium>>;
  /** The page's console messages and errors, shown with a failed step. */
  pageLog: string[];
  /** Every URL the page requested: the key must be in none of them. */
  requested: string[];
  /** Calls Herald's REST API as the project (secret key). */
  api: <T = Record<string, unknown>>(method: string, url: string, body?: unknown) => Promise<T>;
  /** Awaits a step; a failure carries the page's log. */
  step: <T>(promise: Promise<T>) => Promise<T>;
  /**
   * Screenshots at desktop and phone width (only with CONSOLE_SCREENSHOTS=1, first dialect): the whole
   * page, or with `viewport` what the screen shows (a modal dialog over the page), from `scrollTo` if given.
   */
  shoot: (name: string, options?: { viewport?: boolean; scrollTo?: string }) => Promise<void>;
}

/** Registers the hooks that start and stop everything; the getter answers once `beforeAll` ran. */
export function useConsoleHarness(dialect: Dialect, projectName: string): () => ConsoleHarness {
  let harness: ConsoleHarness | undefined;
  let herald: ServerProcess | undefined;
  let database: TestDatabase | undefined;
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-console-'));

  beforeAll(async () => {
    const fakes = await startFakeProviders();
    const caFile = path.join(scratch, 'ca.pem');
    fs.writeFileSync(caFile, fakes.tls.caPem);
    database = await createTestDatabase(dialect);
    const project = await createProject(database.db, systemClock, projectName);
    const port = await freePort();
    const heraldUrl = `http://127.0.0.1:${port}`;
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
    const started = herald;
    await waitFor(async () => (await fetch(`${heraldUrl}/readyz`)).ok, {
      timeoutMs: 60_000,
      intervalMs: 100,
      what: `Herald on ${heraldUrl}`,
    }).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}\n${started.stderr()}`, { cause: error });
    });

    // A zone with a half-hour offset and no DST, unlike the machine's (often UTC): a time the console
    // turns into an instant must carry the browser's offset, and a lost offset shows.
    const browser = await launchChromium({ TZ: BROWSER_TIME_ZONE });
    const page = await browser.context.newPage();
    await page.setViewportSize(DESKTOP);
    const pageLog: string[] = [];
    const requested: string[] = [];
    page.on('console', (message) => pageLog.push(`console.${message.type()}: ${message.text()}`));
    page.on('pageerror', (error) => pageLog.push(`page error: ${error.message}`));
    page.on('request', (request) => requested.push(request.url()));

    harness = {
      dialect,
      fakes,
      project,
      heraldUrl,
      page,
      browser,
      pageLog,
      requested,
      api: async <T>(method: string, url: string, body?: unknown): Promise<T> => {
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
        return (text ? JSON.parse(text) : {}) as T;
      },
      step: async <T>(promise: Promise<T>): Promise<T> => {
        try {
          return await promise;
        } catch (error) {
          throw new Error(`${(error as Error).message}\n${pageLog.join('\n')}`, { cause: error });
        }
      },
      shoot: async (name: string, options: { viewport?: boolean; scrollTo?: string } = {}) => {
        const fullPage = !options.viewport;
        // A resize moves the content, so the part of the screen to show is scrolled to at each width.
        const scroll = async () => {
          if (options.scrollTo)
            await page.locator(options.scrollTo).evaluate((element) => element.scrollIntoView({ block: 'start' }));
        };
        if (!SCREENSHOTS || dialect !== TEST_DIALECTS[0]) return;
        fs.mkdirSync(SCREENSHOTS, { recursive: true });
        // Let fonts and the chart's measured width settle before the picture.
        await page.evaluate(() => document.fonts.ready);
        await scroll();
        await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-desktop.png`), fullPage });
        await page.setViewportSize(PHONE);
        await settled(page);
        await scroll();
        await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-phone.png`), fullPage });
        await page.setViewportSize(DESKTOP);
      },
    };
  }, 120_000);

  afterAll(async () => {
    await harness?.browser.close();
    herald?.kill();
    await herald?.exited;
    await database?.destroy();
    await harness?.fakes.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  return () => {
    if (!harness) throw new Error('console harness not ready');
    return harness;
  };
}

export const BROWSER_TIME_ZONE = 'Asia/Kolkata';

/** The bounding box of the first match, which must be on screen. */
export async function boxOf(page: Page, selector: string) {
  const box = await page.locator(selector).first().boundingBox();
  if (!box) throw new Error(`${selector} is not displayed`);
  return box;
}

/** Two animation frames: a resize's observers have run and Preact has drawn what they set. */
export function settled(page: Page): Promise<void> {
  return page.evaluate(
    () => new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve()))),
  );
}
