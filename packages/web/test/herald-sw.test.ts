import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

// src/sw/herald-sw.ts is a classic service-worker script: it is run here against a plain-object `self`
// that records its listeners, and the tests fire the events a browser would.

type Listener = (event: unknown) => void;

interface FakeClient {
  url: string;
  focus: ReturnType<typeof vi.fn>;
  postMessage: ReturnType<typeof vi.fn>;
}

let listeners: Map<string, Listener>;
let shown: { title: string; options: Record<string, unknown> }[];
let clients: FakeClient[];
let openWindow: ReturnType<typeof vi.fn>;
let resubscribe: ReturnType<typeof vi.fn>;
let cached: Map<string, string>;
let fetched: { url: string; init: RequestInit }[];
let fetchFails: boolean;

const windowClient = (url: string): FakeClient => ({ url, focus: vi.fn(async () => undefined), postMessage: vi.fn() });

beforeEach(async () => {
  listeners = new Map();
  shown = [];
  clients = [];
  openWindow = vi.fn(async () => null);
  resubscribe = vi.fn(async () => ({}));
  cached = new Map();
  fetched = [];
  fetchFails = false;
  // The Cache API as a map of bodies, and fetch as a recorder (Herald's side is tested through its app).
  vi.stubGlobal('caches', {
    open: async () => ({
      put: async (key: string, response: Response) => void cached.set(key, await response.text()),
      match: async (key: string) => (cached.has(key) ? new Response(cached.get(key)) : undefined),
    }),
  });
  vi.stubGlobal('fetch', async (url: string, init: RequestInit) => {
    if (fetchFails) throw new TypeError('Failed to fetch');
    fetched.push({ url, init });
    return new Response('{}', { status: 200 });
  });
  vi.stubGlobal('self', {
    addEventListener: (type: string, listener: Listener) => listeners.set(type, listener),
    registration: {
      showNotification: async (title: string, options: Record<string, unknown>) => void shown.push({ title, options }),
      pushManager: { subscribe: resubscribe },
    },
    clients: { matchAll: async () => clients, openWindow },
  });
  vi.resetModules();
  // A path in a variable: the worker compiles against the WebWorker library, not this test's DOM one.
  const script = '../src/sw/herald-sw.ts';
  await import(/* @vite-ignore */ script);
});
afterEach(() => {
  vi.unstubAllGlobals();
});

/** Fires `type` and resolves once everything handed to waitUntil has settled. */
async function fire(type: string, fields: Record<string, unknown>): Promise<void> {
  const pending: Promise<unknown>[] = [];
  listeners.get(type)!({ ...fields, waitUntil: (promise: Promise<unknown>) => pending.push(promise) });
  await Promise.all(pending);
}

const pushData = (text: string) => ({
  json: () => JSON.parse(text) as unknown,
  text: () => text,
});

describe('push', () => {
  it("shows Herald's payload: title, body, image, the message id as tag, the landing URL for the click", async () => {
    const payload = {
      title: 'Order shipped',
      body: 'A-17 is on its way',
      image: 'https://cdn.example/box.png',
      url: 'https://shop.example/orders/A-17',
      message_id: 'msg-1',
      data: { order: 'A-17' },
    };
    await fire('push', { data: pushData(JSON.stringify(payload)) });
    expect(shown).toEqual([
      {
        title: 'Order shipped',
        options: {
          body: 'A-17 is on its way',
          tag: 'msg-1',
          image: 'https://cdn.example/box.png',
          data: { url: 'https://shop.example/orders/A-17', message_id: 'msg-1', data: { order: 'A-17' } },
        },
      },
    ]);
  });

  it('still shows a notification for an empty, non-JSON or odd payload', async () => {
    await fire('push', { data: null });
    await fire('push', { data: pushData('plain words') });
    await fire('push', {
      data: pushData('{"title": 7, "body": ["x"], "url": "javascript:alert(1)", "image": "data:,x"}'),
    });
    expect(
      shown.map((s) => [s.title, s.options.body, (s.options.data as { url?: string }).url, s.options.image]),
    ).toEqual([
      ['', '', undefined, undefined],
      ['', 'plain words', undefined, undefined],
      ['', '', undefined, undefined],
    ]);
  });
});

describe('notificationclick', () => {
  const click = (data: unknown) => {
    const notification = { data, close: vi.fn() };
    return { notification, done: fire('notificationclick', { notification }) };
  };

  it('closes the notification and opens the landing URL', async () => {
    const { notification, done } = click({ url: 'https://shop.example/orders/A-17' });
    await done;
    expect(notification.close).toHaveBeenCalled();
    expect(openWindow).toHaveBeenCalledWith('https://shop.example/orders/A-17');
  });

  it('focuses a window already showing the landing URL instead of opening another', async () => {
    const open = windowClient('https://shop.example/orders/A-17');
    clients.push(windowClient('https://shop.example/'), open);
    await click({ url: 'https://shop.example/orders/A-17' }).done;
    expect(open.focus).toHaveBeenCalled();
    expect(openWindow).not.toHaveBeenCalled();
  });

  it('opens nothing without an http(s) landing URL', async () => {
    for (const data of [{ url: 'javascript:alert(1)' }, { url: 'file:///etc/passwd' }, { url: 42 }, null, {}]) {
      const { notification, done } = click(data);
      await done;
      expect(notification.close).toHaveBeenCalled();
    }
    expect(openWindow).not.toHaveBeenCalled();
  });
});

describe('pushsubscriptionchange', () => {
  it('subscribes again with the old key when the browser gives no new subscription, then tells the pages', async () => {
    const page = windowClient('https://shop.example/');
    clients.push(page);
    const applicationServerKey = new Uint8Array([4, 1, 2]).buffer;
    await fire('pushsubscriptionchange', { oldSubscription: { options: { applicationServerKey } } });
    expect(resubscribe).toHaveBeenCalledWith({ userVisibleOnly: true, applicationServerKey });
    expect(page.postMessage).toHaveBeenCalledWith({ type: 'herald:pushsubscriptionchange' });
  });

  it('only tells the pages when the browser already made the new subscription, or when subscribing fails', async () => {
    const page = windowClient('https://shop.example/');
    clients.push(page);
    await fire('pushsubscriptionchange', { oldSubscription: null, newSubscription: { endpoint: 'https://push/new' } });
    expect(resubscribe).not.toHaveBeenCalled();
    resubscribe.mockRejectedValueOnce(new DOMException('permission denied', 'NotAllowedError'));
    await fire('pushsubscriptionchange', {
      oldSubscription: { options: { applicationServerKey: new ArrayBuffer(65) } },
    });
    expect(page.postMessage).toHaveBeenCalledTimes(2);
  });
});

describe('open reports', () => {
  const config = { baseUrl: 'https://herald.test/', projectId: 'proj-1', publicKey: 'svc_pk_abc' };
  const tell = (message: unknown) => fire('message', { data: message });
  const click = (data: unknown, action = '') =>
    fire('notificationclick', { notification: { data, close: vi.fn() }, action });

  it("reports a click's open with the action tapped and opens the landing URL", async () => {
    await tell({ type: 'herald:open-config', config: { ...config, userToken: 'tok-ada' } });
    await click({ url: 'https://shop.example/orders/A-17', message_id: 'msg-1' }, 'reply');
    expect(openWindow).toHaveBeenCalledWith('https://shop.example/orders/A-17');
    expect(fetched).toHaveLength(1);
    expect(fetched[0]!.url).toBe('https://herald.test/api/v1/messages/msg-1:open');
    expect(fetched[0]!.init).toMatchObject({
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'X-Service-Project-ID': 'proj-1',
        'X-Service-API-Key': 'svc_pk_abc',
        'X-Service-User-Token': 'tok-ada',
      },
      body: '{"action":"reply"}',
    });
    // A tap on the notification itself sends no action; an odd message id is escaped into one path segment.
    await click({ message_id: 'a/b?c' });
    expect(fetched[1]!.url).toBe('https://herald.test/api/v1/messages/a%2Fb%3Fc:open');
    expect(fetched[1]!.init.body).toBe('{}');
  });

  it('reports nothing without a config or a message id, and ignores malformed configs', async () => {
    await click({ url: 'https://shop.example/', message_id: 'msg-1' });
    expect(fetched).toEqual([]);
    expect(openWindow).toHaveBeenCalledWith('https://shop.example/');
    for (const message of [
      null,
      { type: 'other', config },
      { type: 'herald:open-config', config: { ...config, baseUrl: 'javascript:alert(1)' } },
      { type: 'herald:open-config', config: { ...config, publicKey: 7 } },
    ])
      await tell(message);
    await click({ message_id: 'msg-1' });
    expect(fetched).toEqual([]);
    await tell({ type: 'herald:open-config', config });
    await click({ url: 'https://shop.example/' });
    expect(fetched).toEqual([]);
  });

  it('still opens the landing URL when Herald is unreachable', async () => {
    await tell({ type: 'herald:open-config', config });
    fetchFails = true;
    await click({ url: 'https://shop.example/orders/A-17', message_id: 'msg-1' });
    expect(openWindow).toHaveBeenCalledWith('https://shop.example/orders/A-17');
  });
});
