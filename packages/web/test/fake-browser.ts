import { vi, type Mock } from 'vitest';
import { toBase64Url } from '../src/base64url.js';

// Plain-object stand-ins for the browser APIs @herald/web touches (no jsdom): Notification,
// navigator.serviceWorker with a PushManager, localStorage and fetch. Each test installs a fresh set.

/** An uncompressed P-256 point's shape: 0x04 then 64 bytes. */
export const VAPID_KEY = toBase64Url(Uint8Array.from({ length: 65 }, (_, i) => (i === 0 ? 4 : i)));

export class FakeSubscription {
  unsubscribed = false;
  readonly endpoint: string;
  readonly options: { userVisibleOnly: boolean; applicationServerKey: ArrayBuffer };
  readonly expirationTime = null;
  private readonly keys: Record<string, Uint8Array>;
  constructor(endpoint: string, applicationServerKey: ArrayBuffer, seed = 1) {
    this.endpoint = endpoint;
    this.options = { userVisibleOnly: true, applicationServerKey };
    this.keys = { p256dh: new Uint8Array(65).fill(seed), auth: new Uint8Array(16).fill(seed + 1) };
  }
  getKey(name: string): ArrayBuffer | null {
    const key = this.keys[name];
    return key ? key.slice().buffer : null;
  }
  async unsubscribe(): Promise<boolean> {
    this.unsubscribed = true;
    return true;
  }
}

export class FakePushManager {
  current: FakeSubscription | null = null;
  subscribeCalls: { userVisibleOnly?: boolean; applicationServerKey?: BufferSource }[] = [];
  private made = 0;
  async getSubscription() {
    return this.current && !this.current.unsubscribed ? this.current : null;
  }
  async subscribe(options: { userVisibleOnly?: boolean; applicationServerKey?: BufferSource }) {
    this.subscribeCalls.push(options);
    const key = options.applicationServerKey as Uint8Array;
    this.made++;
    this.current = new FakeSubscription(`https://push.example/sub-${this.made}`, key.slice().buffer, this.made);
    return this.current;
  }
}

export class FakeWorker extends EventTarget {
  state: string;
  /** What pages posted to the worker (`herald:open-config`). */
  readonly posted: unknown[] = [];
  postMessage(message: unknown) {
    this.posted.push(message);
  }
  constructor(state: string) {
    super();
    this.state = state;
  }
  activate() {
    this.state = 'activated';
    this.dispatchEvent(new Event('statechange'));
  }
}

type Route = (body: unknown) => { status: number; body?: unknown; headers?: Record<string, string> };

export interface FakeBrowser {
  permission: NotificationPermission;
  /** What requestPermission answers (the user's choice). */
  answer: NotificationPermission;
  requestPermission: Mock<() => Promise<NotificationPermission>>;
  pushManager: FakePushManager;
  registration: {
    active: FakeWorker | null;
    installing: FakeWorker | null;
    waiting: null;
    pushManager: FakePushManager;
  };
  register: Mock<(url: string, options?: RegistrationOptions) => Promise<FakeBrowser['registration']>>;
  storage: Map<string, string>;
  requests: { url: string; method: string; headers: Headers; body: unknown }[];
  /** Answers by `METHOD path`; a function may vary them per call. */
  routes: Map<string, Route>;
  swMessage(data: unknown): void;
}

export function installFakeBrowser(): FakeBrowser {
  const pushManager = new FakePushManager();
  const storage = new Map<string, string>();
  const messageTarget = new EventTarget();
  const browser: FakeBrowser = {
    permission: 'default',
    answer: 'granted',
    requestPermission: vi.fn<() => Promise<NotificationPermission>>(),
    pushManager,
    registration: { active: new FakeWorker('activated'), installing: null, waiting: null, pushManager },
    register: vi.fn<(url: string, options?: RegistrationOptions) => Promise<FakeBrowser['registration']>>(),
    storage,
    requests: [],
    routes: new Map<string, Route>([
      ['GET /api/v1/push-credentials/webpush/public-key', () => ({ status: 200, body: { public_key: VAPID_KEY } })],
      ['POST /api/v1/devices', () => ({ status: 200, body: { device_id: 'x' } })],
    ]),
    swMessage: (data) => messageTarget.dispatchEvent(new MessageEvent('message', { data })),
  };
  browser.requestPermission.mockImplementation(async () => {
    browser.permission = browser.answer;
    return browser.answer;
  });
  browser.register.mockImplementation(async () => browser.registration);
  vi.stubGlobal('Notification', {
    get permission() {
      return browser.permission;
    },
    requestPermission: browser.requestPermission,
  });
  vi.stubGlobal('PushManager', FakePushManager);
  vi.stubGlobal('navigator', {
    serviceWorker: {
      register: browser.register,
      getRegistration: async () => browser.registration,
      addEventListener: (type: string, listener: EventListener) => messageTarget.addEventListener(type, listener),
    },
  });
  vi.stubGlobal('localStorage', {
    getItem: (key: string) => storage.get(key) ?? null,
    setItem: (key: string, value: string) => void storage.set(key, value),
    removeItem: (key: string) => void storage.delete(key),
  });
  vi.stubGlobal('fetch', async (input: string, init: RequestInit = {}) => {
    const url = new URL(input);
    const method = init.method ?? 'GET';
    const body: unknown = typeof init.body === 'string' ? JSON.parse(init.body) : undefined;
    browser.requests.push({ url: input, method, headers: new Headers(init.headers), body });
    const route = browser.routes.get(`${method} ${url.pathname}`);
    const answer = route ? route(body) : { status: 404, body: { error: 'Not found' } };
    return new Response(answer.body === undefined ? null : JSON.stringify(answer.body), {
      status: answer.status,
      headers: { 'content-type': 'application/json', ...answer.headers },
    });
  });
  return browser;
}

export const devicePosts = (browser: FakeBrowser) =>
  browser.requests.filter((r) => r.method === 'POST' && r.url.endsWith('/api/v1/devices'));
