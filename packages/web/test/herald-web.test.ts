import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fromBase64Url, toBase64Url } from '../src/base64url.js';
import { createHeraldWeb, HeraldRequestError, HeraldWebError, type HeraldWebOptions } from '../src/index.js';
import {
  devicePosts,
  FakeSubscription,
  FakeWorker,
  installFakeBrowser,
  VAPID_KEY,
  type FakeBrowser,
} from './fake-browser.js';

const OPTIONS: HeraldWebOptions = { baseUrl: 'https://herald.test/', projectId: 'proj-1', publicKey: 'svc_pk_abc' };

let browser: FakeBrowser;
beforeEach(() => {
  browser = installFakeBrowser();
});
afterEach(() => {
  vi.unstubAllGlobals();
});

const flush = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('permission', () => {
  it('reports the browser permission and whether a prompt is still possible', () => {
    const herald = createHeraldWeb(OPTIONS);
    expect([herald.isSupported(), herald.permissionState(), herald.canPrompt()]).toEqual([true, 'default', true]);
    browser.permission = 'denied';
    expect([herald.permissionState(), herald.canPrompt()]).toEqual(['denied', false]);
    browser.permission = 'granted';
    expect([herald.permissionState(), herald.canPrompt()]).toEqual(['granted', false]);
  });

  it('says unsupported where the browser has no Web Push, and subscribe refuses', async () => {
    vi.stubGlobal('PushManager', undefined);
    const herald = createHeraldWeb(OPTIONS);
    expect([herald.isSupported(), herald.permissionState(), herald.canPrompt()]).toEqual([false, 'unsupported', false]);
    await expect(herald.subscribe('alice')).rejects.toMatchObject({ code: 'unsupported' });
    expect(await herald.refresh('alice')).toEqual({ status: 'unsupported' });
  });

  it('asks for permission synchronously inside the gesture, before any await', async () => {
    const herald = createHeraldWeb(OPTIONS);
    const done = herald.subscribe('alice');
    expect(browser.requestPermission).toHaveBeenCalledTimes(1);
    await done;
  });

  it('does not ask again once decided, and stops on a refusal or a dismissed prompt', async () => {
    const herald = createHeraldWeb(OPTIONS);
    browser.permission = 'denied';
    const denied = await herald.subscribe('alice').catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(HeraldWebError);
    expect((denied as HeraldWebError).code).toBe('permission-denied');
    expect(browser.requestPermission).not.toHaveBeenCalled();

    browser.permission = 'default';
    browser.answer = 'default'; // the user closed the prompt
    await expect(herald.subscribe('alice')).rejects.toMatchObject({ code: 'permission-dismissed' });
    expect(browser.pushManager.subscribeCalls).toHaveLength(0);
    expect(devicePosts(browser)).toHaveLength(0);
  });
});

describe('subscribe', () => {
  it("subscribes with the project's VAPID key fetched with the public key and registers the device", async () => {
    const herald = createHeraldWeb(OPTIONS);
    const registration = await herald.subscribe('alice');

    const keyRequest = browser.requests[0]!;
    expect(keyRequest.url).toBe('https://herald.test/api/v1/push-credentials/webpush/public-key');
    expect(keyRequest.headers.get('x-service-project-id')).toBe('proj-1');
    expect(keyRequest.headers.get('x-service-api-key')).toBe('svc_pk_abc');
    expect(browser.register).toHaveBeenCalledWith('/herald-sw.js', undefined);
    const [call] = browser.pushManager.subscribeCalls;
    expect(call!.userVisibleOnly).toBe(true);
    expect(Array.from(call!.applicationServerKey as Uint8Array)).toEqual(Array.from(fromBase64Url(VAPID_KEY)));

    const [post] = devicePosts(browser);
    expect(post!.url).toBe('https://herald.test/api/v1/devices');
    expect(post!.headers.get('x-service-api-key')).toBe('svc_pk_abc');
    expect(post!.headers.get('content-type')).toBe('application/json');
    expect(post!.headers.has('x-service-user-token')).toBe(false);
    expect(post!.body).toEqual({
      device_id: registration.deviceId,
      project_user_id: 'alice',
      platform: 'web',
      web_push_subscription: {
        endpoint: 'https://push.example/sub-1',
        expirationTime: null,
        keys: { p256dh: toBase64Url(new Uint8Array(65).fill(1)), auth: toBase64Url(new Uint8Array(16).fill(2)) },
      },
    });
    expect(registration).toMatchObject({ projectUserId: 'alice', endpoint: 'https://push.example/sub-1' });
    expect(herald.current()).toEqual(registration);
    expect(JSON.parse(browser.storage.get('herald:web-push:proj-1')!)).toEqual(registration);
  });

  it('sends the identity token the app gives for the user, and uses a configured key without asking Herald', async () => {
    const userToken = vi.fn(async (user: string) => `token-for-${user}`);
    const herald = createHeraldWeb({
      ...OPTIONS,
      applicationServerKey: VAPID_KEY,
      userToken,
      serviceWorkerUrl: '/sw.js',
      serviceWorkerScope: '/app/',
    });
    await herald.subscribe('bob');
    expect(userToken).toHaveBeenCalledWith('bob');
    expect(browser.requests.map((r) => `${r.method} ${new URL(r.url).pathname}`)).toEqual(['POST /api/v1/devices']);
    expect(devicePosts(browser)[0]!.headers.get('x-service-user-token')).toBe('token-for-bob');
    expect(browser.register).toHaveBeenCalledWith('/sw.js', { scope: '/app/' });
    // The worker learns how to report a click as an open, with the user's token.
    expect(browser.registration.active!.posted).toEqual([
      {
        type: 'herald:open-config',
        config: {
          baseUrl: 'https://herald.test/',
          projectId: 'proj-1',
          publicKey: 'svc_pk_abc',
          userToken: 'token-for-bob',
        },
      },
    ]);
    // A refresh that registers nothing still hands the worker a fresh token.
    userToken.mockResolvedValueOnce('token-2');
    expect((await herald.refresh()).status).toBe('unchanged');
    expect(browser.registration.active!.posted.at(-1)).toMatchObject({ config: { userToken: 'token-2' } });
  });

  it('tells the worker the connection (no token without identity verification) at subscribe', async () => {
    await createHeraldWeb(OPTIONS).subscribe('alice');
    expect(browser.registration.active!.posted).toEqual([
      {
        type: 'herald:open-config',
        config: { baseUrl: 'https://herald.test/', projectId: 'proj-1', publicKey: 'svc_pk_abc' },
      },
    ]);
  });

  it('waits for a first-installed service worker to activate before subscribing', async () => {
    const installing = new FakeWorker('installing');
    browser.registration.active = null;
    browser.registration.installing = installing;
    const herald = createHeraldWeb(OPTIONS);
    const done = herald.subscribe('alice');
    await flush();
    expect(browser.pushManager.subscribeCalls).toHaveLength(0);
    installing.activate();
    await done;
    expect(browser.pushManager.subscribeCalls).toHaveLength(1);
  });

  it('keeps an existing subscription for the same key and replaces one made for another key', async () => {
    browser.permission = 'granted';
    const key = fromBase64Url(VAPID_KEY);
    const same = new FakeSubscription('https://push.example/kept', key.slice().buffer);
    browser.pushManager.current = same;
    const herald = createHeraldWeb(OPTIONS);
    expect((await herald.subscribe('alice')).endpoint).toBe('https://push.example/kept');
    expect(browser.pushManager.subscribeCalls).toHaveLength(0);

    // The project rotated its VAPID key: the old subscription can receive nothing any more.
    const stale = new FakeSubscription('https://push.example/stale', new Uint8Array(65).fill(9).buffer);
    browser.pushManager.current = stale;
    const herald2 = createHeraldWeb(OPTIONS);
    expect((await herald2.subscribe('alice')).endpoint).toBe('https://push.example/sub-1');
    expect(stale.unsubscribed).toBe(true);
  });

  it('becomes a new device when Herald says the device id is held by another user (409)', async () => {
    let first = true;
    browser.routes.set('POST /api/v1/devices', () => {
      if (!first) return { status: 200, body: {} };
      first = false;
      return {
        status: 409,
        body: { error: 'This device_id is registered to another user' },
        headers: { 'x-error-reason': 'DEVICE_OWNED_BY_ANOTHER_USER' },
      };
    });
    browser.storage.set(
      'herald:web-push:proj-1',
      JSON.stringify({
        deviceId: 'old-id',
        projectUserId: 'alice',
        endpoint: 'e',
        p256dh: 'p',
        auth: 'a',
        registeredAt: 1,
      }),
    );
    const herald = createHeraldWeb(OPTIONS);
    const registration = await herald.subscribe('bob');
    const posts = devicePosts(browser);
    expect(posts.map((p) => (p.body as { device_id: string }).device_id)[0]).toBe('old-id');
    expect(posts).toHaveLength(2);
    expect(registration.deviceId).not.toBe('old-id');
    expect((posts[1]!.body as { device_id: string }).device_id).toBe(registration.deviceId);
  });

  it("reports Herald's refusals with status and reason, and stores nothing", async () => {
    browser.routes.set('POST /api/v1/devices', () => ({
      status: 401,
      body: { error: 'Identity verification failed' },
      headers: { 'x-error-reason': 'IDENTITY_VERIFICATION_FAILED' },
    }));
    const herald = createHeraldWeb(OPTIONS);
    const error = await herald.subscribe('alice').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HeraldRequestError);
    expect(error).toMatchObject({ status: 401, reason: 'IDENTITY_VERIFICATION_FAILED' });
    expect((error as Error).message).toContain('Identity verification failed');
    expect(herald.current()).toBeUndefined();
  });

  it('fails clearly when the project has no Web Push credentials, and asks again next time', async () => {
    browser.routes.set('GET /api/v1/push-credentials/webpush/public-key', () => ({
      status: 404,
      body: { error: 'This project has no Web Push credentials' },
    }));
    const herald = createHeraldWeb(OPTIONS);
    await expect(herald.subscribe('alice')).rejects.toMatchObject({ status: 404 });
    browser.routes.set('GET /api/v1/push-credentials/webpush/public-key', () => ({
      status: 200,
      body: { public_key: VAPID_KEY },
    }));
    await herald.subscribe('alice');
    expect(devicePosts(browser)).toHaveLength(1);
  });

  it('reports an unreachable Herald as status 0', async () => {
    const herald = createHeraldWeb({
      ...OPTIONS,
      fetch: async () => {
        throw new TypeError('Failed to fetch');
      },
    });
    await expect(herald.subscribe('alice')).rejects.toMatchObject({ name: 'HeraldRequestError', status: 0 });
  });
});

describe('refresh', () => {
  it('never prompts, and needs a user', async () => {
    const herald = createHeraldWeb(OPTIONS);
    expect(await herald.refresh()).toEqual({ status: 'not-subscribed' });
    expect(await herald.refresh('alice')).toEqual({ status: 'permission-default' });
    browser.permission = 'denied';
    expect(await herald.refresh('alice')).toEqual({ status: 'permission-denied' });
    expect(browser.requestPermission).not.toHaveBeenCalled();
    expect(browser.requests).toHaveLength(0);
  });

  it('leaves an unchanged registration alone and re-registers a rotated subscription with the same device id', async () => {
    const herald = createHeraldWeb(OPTIONS);
    const first = await herald.subscribe('alice');
    expect(await herald.refresh()).toMatchObject({ status: 'unchanged' });
    expect(devicePosts(browser)).toHaveLength(1);

    // The browser replaced the subscription (a new page load sees only the new one).
    await browser.pushManager.subscribe({ applicationServerKey: fromBase64Url(VAPID_KEY) });
    const fresh = createHeraldWeb(OPTIONS);
    const result = await fresh.refresh();
    expect(result.status).toBe('registered');
    expect(result.registration).toMatchObject({ deviceId: first.deviceId, endpoint: 'https://push.example/sub-2' });
    expect(devicePosts(browser)[1]!.body).toMatchObject({
      device_id: first.deviceId,
      web_push_subscription: { endpoint: 'https://push.example/sub-2' },
    });
  });

  it('subscribes again without a prompt when the browser lost the subscription but permission stands', async () => {
    browser.permission = 'granted';
    const herald = createHeraldWeb(OPTIONS);
    const result = await herald.refresh('alice');
    expect(result).toMatchObject({ status: 'registered', registration: { projectUserId: 'alice' } });
    expect(browser.requestPermission).not.toHaveBeenCalled();
  });

  it('moves the device to the user who signed in', async () => {
    const herald = createHeraldWeb(OPTIONS);
    const first = await herald.subscribe('alice');
    const result = await herald.refresh('bob');
    expect(result).toMatchObject({
      status: 'registered',
      registration: { deviceId: first.deviceId, projectUserId: 'bob' },
    });
  });

  it('re-registers when the service worker reports a subscription change, one registration at a time', async () => {
    const herald = createHeraldWeb(OPTIONS);
    await herald.subscribe('alice');
    // The browser replaced the subscription; herald-sw.js posts the news to the page.
    await browser.pushManager.subscribe({ applicationServerKey: fromBase64Url(VAPID_KEY) });
    browser.swMessage({ type: 'something-else' });
    browser.swMessage({ type: 'herald:pushsubscriptionchange' });
    expect(await herald.refresh()).toMatchObject({ status: 'unchanged' }); // queued behind the message's refresh
    const endpoints = devicePosts(browser).map(
      (p) => (p.body as { web_push_subscription: { endpoint: string } }).web_push_subscription.endpoint,
    );
    expect(endpoints).toEqual(['https://push.example/sub-1', 'https://push.example/sub-2']);
    expect(herald.current()?.endpoint).toBe('https://push.example/sub-2');
  });
});

describe('unsubscribe', () => {
  it('unsubscribes the browser, forgets the registration and hands back the device id', async () => {
    const herald = createHeraldWeb(OPTIONS);
    const registration = await herald.subscribe('alice');
    const subscription = browser.pushManager.current!;
    expect(await herald.unsubscribe()).toEqual({ deviceId: registration.deviceId });
    expect(subscription.unsubscribed).toBe(true);
    expect(herald.current()).toBeUndefined();
    expect(await herald.refresh()).toEqual({ status: 'not-subscribed' });

    // The next user on this browser is a new device: the old row keeps a dead address until Herald prunes it.
    const next = await herald.subscribe('bob');
    expect(next.deviceId).not.toBe(registration.deviceId);
  });

  it('is harmless when nothing was subscribed', async () => {
    const herald = createHeraldWeb(OPTIONS);
    expect(await herald.unsubscribe()).toEqual({ deviceId: undefined });
  });
});

describe('base64url', () => {
  it('round-trips every byte value and reads padded base64 too', () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    const text = toBase64Url(bytes);
    expect(text).not.toMatch(/[+/=]/);
    expect(Array.from(fromBase64Url(text))).toEqual(Array.from(bytes));
    expect(Array.from(fromBase64Url('+/8='))).toEqual([251, 255]);
  });
});
