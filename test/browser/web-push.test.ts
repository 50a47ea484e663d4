import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExampleServer } from '../../examples/web-push/server.js';
import { systemClock } from '../../src/lib/clock.js';
import { createProject, type CreatedProject } from '../../src/projects/projects.service.js';
import { startFakeProviders, type FakeProviders } from '../../src/fake-providers/fake-providers.js';
import { decryptAes128gcm } from '../../src/fake-providers/fake-webpush.js';
import { startServerProcess, type ServerProcess } from '../helpers/processes.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/wait-for.js';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import { launchChromium } from './chromium.js';
import { startNotificationDaemon, type NotificationDaemon } from './notification-daemon.js';

// The whole Web Push path in a real Chromium: the example app (examples/web-push) uses @herald/web
// to register its subscription with a real Herald process; a send through the app's backend is
// encrypted by Herald and captured by the local Web Push stand-in; the test decrypts it with the
// keys the page made (proof that Herald encrypted for this browser), delivers it into the page's
// service worker through the DevTools protocol (ServiceWorker.deliverPushMessage), sees herald-sw.js
// show the notification, and clicks it on the desktop's notification server, which makes Chromium
// open the landing URL and herald-sw.js report the open to Herald.
//
// The one thing replaced in the page: Chromium cannot reach a real push service offline, so
// PushManager.prototype.subscribe is replaced (examples/web-push/public/stand-in-push.js, loaded
// because the app runs against the stand-in) by one that takes its endpoint from the stand-in and
// makes real P-256 and auth keys with WebCrypto. Everything else is the browser's own.

const HERALD_SECRET_KEY = crypto.randomBytes(32).toString('hex');

describe.each(TEST_DIALECTS)('Web Push in Chromium, Herald on %s', (dialect) => {
  let fakes: FakeProviders;
  let database: TestDatabase;
  let project: CreatedProject;
  let herald: ServerProcess;
  let heraldUrl: string;
  let example: Awaited<ReturnType<typeof startExampleServer>>;
  let daemon: NotificationDaemon;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let context: BrowserContext;
  let page: Page;
  /** The page's console and errors, shown when a step fails. */
  const pageLog: string[] = [];
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-browser-'));

  const heraldCall = async (method: string, url: string, body?: unknown, key = project.secret_key) => {
    const response = await fetch(`${heraldUrl}${url}`, {
      method,
      headers: {
        'X-Service-Project-ID': project.project_id,
        'X-Service-API-Key': key,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };

  /** GET on the stand-in's own API (HTTPS with its certificate authority). */
  const standIn = (url: string) =>
    new Promise<{ status: number; body: unknown }>((resolve, reject) => {
      https
        .get(`${fakes.webpush.url}${url}`, { ca: fakes.tls.caPem }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) }),
          );
        })
        .on('error', reject);
    });

  /** Adds the page's console, errors and service worker states to a failure. */
  const withPageLog = async <T>(promise: Promise<T>): Promise<T> => {
    try {
      return await promise;
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${pageLog.join('\n')}`, { cause: error });
    }
  };

  /** Waits until the page's state (set by the example app) is `state`; fails at once on `error`. */
  const pageState = async (state: string) => {
    await withPageLog(
      page.waitForFunction((wanted) => ['error', wanted].includes(document.body.dataset.state ?? ''), state, {
        timeout: 30_000,
      }),
    );
    expect(await page.textContent('#status')).not.toMatch(/^(Could not|Send failed)/);
    expect(await page.evaluate(() => document.body.dataset.state)).toBe(state);
  };

  beforeAll(async () => {
    fakes = await startFakeProviders();
    const caFile = path.join(scratch, 'ca.pem');
    fs.writeFileSync(caFile, fakes.tls.caPem);
    database = await createTestDatabase(dialect);
    project = await createProject(database.db, systemClock, 'web-push');
    const port = await freePort();
    heraldUrl = `http://127.0.0.1:${port}`;
    herald = startServerProcess({
      ...database.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      HERALD_SECRET_KEY,
      NODE_EXTRA_CA_CERTS: caFile,
      // The stand-in's endpoints are on loopback, which tenant URLs may not reach otherwise.
      OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true',
    });
    await waitFor(async () => (await fetch(`${heraldUrl}/readyz`)).ok, {
      timeoutMs: 60_000,
      intervalMs: 100,
      what: `Herald on ${heraldUrl}`,
    }).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}\n${herald.stderr()}`, { cause: error });
    });
    expect(
      (await heraldCall('PUT', '/api/v1/push-credentials/webpush', { subject: 'mailto:ops@example.com' })).status,
    ).toBe(200);
    const identity = await heraldCall('PUT', '/api/v1/identity-verification');
    expect(identity.status).toBe(200);

    example = await startExampleServer({
      port: 0,
      host: '127.0.0.1',
      heraldUrl,
      projectId: project.project_id,
      publicKey: project.public_key,
      secretKey: project.secret_key,
      identityKey: identity.body.signing_key as string,
      standInUrl: fakes.webpush.url,
      standInCa: fakes.tls.caPem,
    });
    daemon = await startNotificationDaemon();
    browser = await launchChromium({ DBUS_SESSION_BUS_ADDRESS: daemon.busAddress });
    context = browser.context;
    page = await context.newPage();
    page.on('console', (message) => pageLog.push(`console.${message.type()}: ${message.text()}`));
    page.on('pageerror', (error) => pageLog.push(`page error: ${error.message}`));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await daemon?.close();
    await example?.close();
    herald?.kill();
    await herald?.exited;
    await database?.destroy();
    await fakes?.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it(
    'registers the page, delivers what Herald encrypted into its service worker, and opens the landing URL on a click',
    { timeout: 120_000 },
    async () => {
      // The example app is on http://localhost (a secure context) and Herald on another origin: CORS.
      await page.goto(example.url);
      await pageState('ready');
      await page.fill('#user', 'alice');
      await page.click('#login button');
      await pageState('signed-in');

      // Identity verification is on: the public key alone cannot register alice (and the page can read why).
      const unsigned = await page.evaluate(
        async ({ url, projectId, publicKey }) => {
          const response = await fetch(`${url}/api/v1/devices`, {
            method: 'POST',
            headers: {
              'Content-Type': 'application/json',
              'X-Service-Project-ID': projectId,
              'X-Service-API-Key': publicKey,
            },
            body: JSON.stringify({ project_user_id: 'alice', platform: 'android', fcm_token: 'forged' }),
          });
          return { status: response.status, reason: response.headers.get('X-Error-Reason') };
        },
        { url: heraldUrl, projectId: project.project_id, publicKey: project.public_key },
      );
      expect(unsigned).toEqual({ status: 401, reason: 'IDENTITY_VERIFICATION_FAILED' });

      // Nothing asked on page load or sign-in: the permission is still undecided, the button is offered.
      expect(await page.textContent('#status')).toBe('Signed in (notifications: permission-default).');
      expect(await page.evaluate(() => Notification.permission)).toBe('default');
      // Headless Chromium shows no prompt to answer, so the user's "Allow" is given as the click happens.
      await context.grantPermissions(['notifications'], { origin: example.url });
      await page.click('#subscribe');
      await pageState('subscribed');
      const stored = await page.evaluate(
        (key) => JSON.parse(localStorage.getItem(key) ?? 'null') as { deviceId: string; endpoint: string },
        `herald:web-push:${project.project_id}`,
      );
      expect(stored.endpoint.startsWith(`${fakes.webpush.url}/push/browser-`)).toBe(true);
      const devices = await heraldCall('GET', '/api/v1/users/alice/devices');
      expect(devices.body.devices).toEqual([
        expect.objectContaining({ device_id: stored.deviceId, platform: 'web', provider: 'webpush', status: 'active' }),
      ]);

      await page.click('#send');
      await pageState('sent');
      expect(await page.textContent('#status')).toBe('Sent: DELIVERY_RESULT_STATUS_ACCEPTED.');
      const sent = JSON.parse((await page.textContent('#log'))!) as { delivery_results: { message_id: string }[] };

      // What the push service holds for this browser: ciphertext only. Decrypt it with the page's keys.
      const id = stored.endpoint.split('/').pop()!;
      const captured = (await standIn(`/subscriptions/${id}/messages`)).body as { messages: { body: string }[] };
      expect(captured.messages).toHaveLength(1);
      const keys = await page.evaluate(
        (key) => JSON.parse(localStorage.getItem(key)!) as { privateJwk: { d: string }; auth: string },
        `stand-in-push:${stored.endpoint}`,
      );
      const ua = crypto.createECDH('prime256v1');
      ua.setPrivateKey(Buffer.from(keys.privateJwk.d, 'base64url'));
      const plaintext = decryptAes128gcm(
        Buffer.from(captured.messages[0]!.body, 'base64url'),
        ua,
        Buffer.from(keys.auth, 'base64url'),
      ).toString('utf8');
      const landingUrl = `${example.url}/landing.html`;
      expect(JSON.parse(plaintext)).toEqual({
        title: 'Hello from Herald',
        body: 'A notification for alice',
        url: landingUrl,
        message_id: sent.delivery_results[0]!.message_id,
        data: {},
      });

      // Deliver it as the push service would, into the page's service worker.
      const cdp = await context.newCDPSession(page);
      const registrations: { registrationId: string; scopeURL: string; isDeleted: boolean }[] = [];
      cdp.on('ServiceWorker.workerRegistrationUpdated', (event) => registrations.push(...event.registrations));
      cdp.on('ServiceWorker.workerErrorReported', ({ errorMessage }) =>
        pageLog.push(
          `service worker error: ${errorMessage.errorMessage} (${errorMessage.sourceURL}:${errorMessage.lineNumber})`,
        ),
      );
      cdp.on('ServiceWorker.workerVersionUpdated', ({ versions }) =>
        pageLog.push(...versions.map((v) => `service worker ${v.scriptURL}: ${v.runningStatus}/${v.status}`)),
      );
      await cdp.send('ServiceWorker.enable');
      const registration = await waitFor(
        async () => registrations.find((r) => r.scopeURL === `${example.url}/` && !r.isDeleted),
        { timeoutMs: 20_000, what: 'the service worker registration' },
      );
      await cdp.send('ServiceWorker.deliverPushMessage', {
        origin: example.url,
        registrationId: registration.registrationId,
        data: plaintext,
      });

      // Chromium hands it to the desktop's notification server, and lists it for the page's worker.
      const onDesktop = await withPageLog(
        waitFor(async () => daemon.shown[0], { timeoutMs: 20_000, what: 'the desktop notification' }),
      );
      expect(onDesktop.summary).toBe('Hello from Herald');
      const notifications = await withPageLog(
        waitFor(
          async () => {
            const list = await page.evaluate(async () => {
              const registration = await navigator.serviceWorker.getRegistration();
              const all = (await registration?.getNotifications()) ?? [];
              return all.map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data as unknown }));
            });
            return list.length > 0 ? list : undefined;
          },
          { timeoutMs: 20_000, intervalMs: 100, what: 'the notification in getNotifications()' },
        ),
      );
      expect(notifications).toEqual([
        {
          title: 'Hello from Herald',
          body: 'A notification for alice',
          tag: sent.delivery_results[0]!.message_id,
          data: { url: landingUrl, message_id: sent.delivery_results[0]!.message_id, data: {} },
        },
      ]);

      // The user clicks it on the desktop: Chromium dispatches notificationclick, herald-sw.js opens the URL.
      const opened = context.waitForEvent('page', { timeout: 20_000 });
      daemon.click(onDesktop.id);
      const landing = await opened;
      await landing.waitForLoadState();
      expect(landing.url()).toBe(landingUrl);
      expect(await landing.textContent('h1')).toBe('Landing page');
      await landing.close();

      // herald-sw.js reported the click to Herald (public key, alice's token): the open is counted once.
      const messageId = sent.delivery_results[0]!.message_id;
      const openedAt = await withPageLog(
        waitFor(
          async () =>
            ((await heraldCall('GET', `/api/v1/messages/${messageId}`)).body.opened_at as string | null) ?? undefined,
          { timeoutMs: 20_000, intervalMs: 100, what: 'the open reported by the service worker' },
        ),
      );
      expect(Date.parse(openedAt)).toBeGreaterThan(0);
    },
  );

  it(
    'unsubscribes on sign-out, so the next send finds the address gone and Herald prunes the device',
    { timeout: 60_000 },
    async () => {
      const stored = await page.evaluate(
        (key) => JSON.parse(localStorage.getItem(key) ?? 'null') as { endpoint: string },
        `herald:web-push:${project.project_id}`,
      );
      await page.click('#logout');
      await pageState('signed-out');
      expect(
        await page.evaluate((key) => localStorage.getItem(key), `herald:web-push:${project.project_id}`),
      ).toBeNull();
      expect((await standIn(`/subscriptions/${stored.endpoint.split('/').pop()}/messages`)).status).toBe(404);

      const send = await heraldCall('POST', '/api/v1/messages:send', {
        push_notifications: [{ target: { project_user_id: 'alice' }, title: 'After sign-out' }],
      });
      expect(send.status).toBe(200);
      const [result] = send.body.delivery_results as {
        deliveries: { status: string; additional_params: { failure_reason: string } }[];
      }[];
      expect(result!.deliveries[0]!.status).toBe('DELIVERY_RESULT_STATUS_TOKEN_UNREGISTERED');
      expect((await heraldCall('GET', '/api/v1/users/alice/devices')).body.devices).toEqual([]);
    },
  );
});
