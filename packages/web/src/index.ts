import { fromBase64Url, sameKey, toBase64Url } from './base64url.js';
import {
  fetchVapidPublicKey,
  HeraldRequestError,
  registerWebDevice,
  type HeraldConnection,
  type WebPushSubscriptionJson,
} from './herald-api.js';
import {
  forgetRegistration,
  loadRegistration,
  saveRegistration,
  type StoredRegistration,
} from './registration-store.js';

export { HeraldRequestError, type StoredRegistration };

export interface HeraldWebOptions {
  /** Herald's base URL, e.g. `https://herald.example.com`. */
  baseUrl: string;
  projectId: string;
  /** The project's public key (`svc_pk_...`); never the secret key. */
  publicKey: string;
  /** The project's VAPID public key (base64url); fetched from Herald with the public key when absent. */
  applicationServerKey?: string;
  /** Where `herald-sw.js` (or your own worker that imports it) is served; default `/herald-sw.js`. */
  serviceWorkerUrl?: string;
  serviceWorkerScope?: string;
  /**
   * With identity verification on (docs/security.md), a token your backend signs for the user
   * (`X-Service-User-Token`); called before every registration.
   */
  userToken?: (projectUserId: string) => Promise<string | undefined> | string | undefined;
  fetch?: typeof fetch;
}

export type PermissionState = NotificationPermission | 'unsupported';

export type HeraldWebErrorCode = 'unsupported' | 'permission-denied' | 'permission-dismissed';

export class HeraldWebError extends Error {
  readonly code: HeraldWebErrorCode;
  constructor(code: HeraldWebErrorCode, message: string) {
    super(message);
    this.name = 'HeraldWebError';
    this.code = code;
  }
}

export interface RefreshResult {
  /**
   * `registered`: sent to Herald (new, rotated or changed user); `unchanged`: Herald already has it;
   * `not-subscribed`: no user known; `permission-default`/`permission-denied`: nothing to register
   * (never prompts); `unsupported`: no Web Push in this browser.
   */
  status: 'registered' | 'unchanged' | 'not-subscribed' | 'permission-default' | 'permission-denied' | 'unsupported';
  registration?: StoredRegistration;
}

export interface HeraldWeb {
  isSupported(): boolean;
  /** The browser's notification permission, or `unsupported`. */
  permissionState(): PermissionState;
  /** Whether `subscribe()` would show the browser's permission prompt (supported and not yet decided). */
  canPrompt(): boolean;
  /**
   * Asks for permission if needed, subscribes and registers this browser for `projectUserId`.
   * Call it from a user gesture (a click on "Turn on notifications"), never on page load: browsers
   * block or quiet prompts that come unasked, and a refusal is final.
   */
  subscribe(projectUserId: string): Promise<StoredRegistration>;
  /**
   * For every page load once the user is known: re-registers when the browser replaced the
   * subscription, the keys changed or another user signed in. Never prompts.
   */
  refresh(projectUserId?: string): Promise<RefreshResult>;
  /**
   * On logout: unsubscribes the browser (its push service drops the address, so Herald prunes the
   * device at its next send) and forgets the registration. Returns the device id so your backend can
   * delete it at once with the secret key (`DELETE /api/v1/devices/{device_id}`).
   */
  unsubscribe(): Promise<{ deviceId: string | undefined }>;
  /** What this browser registered, if anything. */
  current(): StoredRegistration | undefined;
}

const SUBSCRIPTION_CHANGE = 'herald:pushsubscriptionchange';
/** Tells the service worker how to report a click as an open (src/sw/herald-sw.ts). */
const OPEN_CONFIG = 'herald:open-config';

export function createHeraldWeb(options: HeraldWebOptions): HeraldWeb {
  const connection: HeraldConnection = {
    baseUrl: options.baseUrl,
    projectId: options.projectId,
    publicKey: options.publicKey,
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
  };
  const swUrl = options.serviceWorkerUrl ?? '/herald-sw.js';
  let vapidKey: Promise<Uint8Array<ArrayBuffer>> | undefined;
  // The subscription this page last made: browsers return it from getSubscription() too; kept in
  // case one does not (a wrapped or polyfilled PushManager).
  let lastSubscription: PushSubscription | undefined;
  let refreshing: Promise<RefreshResult> | undefined;

  const isSupported = () =>
    typeof navigator !== 'undefined' &&
    'serviceWorker' in navigator &&
    typeof PushManager !== 'undefined' &&
    typeof Notification !== 'undefined';

  const permissionState = (): PermissionState => (isSupported() ? Notification.permission : 'unsupported');

  const applicationServerKey = () => {
    vapidKey ??= (
      options.applicationServerKey !== undefined
        ? Promise.resolve(options.applicationServerKey)
        : fetchVapidPublicKey(connection)
    ).then(fromBase64Url);
    // A failed fetch is tried again next time.
    vapidKey.catch(() => (vapidKey = undefined));
    return vapidKey;
  };

  async function serviceWorker(): Promise<ServiceWorkerRegistration> {
    const registration = await navigator.serviceWorker.register(
      swUrl,
      options.serviceWorkerScope ? { scope: options.serviceWorkerScope } : undefined,
    );
    // pushManager.subscribe needs an active worker; a first install is still installing here.
    const worker = registration.installing ?? registration.waiting;
    if (!registration.active && worker)
      await new Promise<void>((resolve) => {
        const check = () => {
          if (worker.state === 'activated' || worker.state === 'redundant') resolve();
        };
        worker.addEventListener('statechange', check);
        check();
      });
    return registration;
  }

  /** The browser's subscription for the project's key: the existing one, or a new one (no prompt once granted). */
  async function browserSubscription(registration: ServiceWorkerRegistration): Promise<PushSubscription> {
    const key = await applicationServerKey();
    let existing = (await registration.pushManager.getSubscription()) ?? lastSubscription ?? null;
    // A subscription made for another VAPID key (the project rotated it) receives nothing any more.
    if (existing && !sameKey(existing.options?.applicationServerKey, key)) {
      await existing.unsubscribe().catch(() => false);
      existing = null;
    }
    lastSubscription =
      existing ?? (await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key }));
    return lastSubscription;
  }

  function subscriptionJson(subscription: PushSubscription): WebPushSubscriptionJson {
    const keyOf = (name: PushEncryptionKeyName) => {
      const key = subscription.getKey(name);
      return key ? toBase64Url(key) : '';
    };
    return {
      endpoint: subscription.endpoint,
      expirationTime: subscription.expirationTime ?? null,
      keys: { p256dh: keyOf('p256dh'), auth: keyOf('auth') },
    };
  }

  /** Hands the worker what a notification click needs to report the open, the user's token included. */
  function tellWorker(registration: ServiceWorkerRegistration, userToken: string | undefined): void {
    const worker = registration.active ?? registration.waiting ?? registration.installing;
    worker?.postMessage({
      type: OPEN_CONFIG,
      config: {
        baseUrl: options.baseUrl,
        projectId: options.projectId,
        publicKey: options.publicKey,
        ...(userToken ? { userToken } : {}),
      },
    });
  }

  async function register(
    projectUserId: string,
    subscription: PushSubscription,
    worker: ServiceWorkerRegistration,
  ): Promise<StoredRegistration> {
    const json = subscriptionJson(subscription);
    const stored = loadRegistration(options.projectId);
    const userToken = await options.userToken?.(projectUserId);
    tellWorker(worker, userToken);
    let deviceId = stored?.deviceId ?? crypto.randomUUID();
    const attempt = () => registerWebDevice(connection, { deviceId, projectUserId, subscription: json, userToken });
    try {
      await attempt();
    } catch (error) {
      // 409: this device id is another user's and our address no longer proves it ours (the browser
      // rotated it since); the public key cannot move it, so this browser becomes a new device.
      if (!(error instanceof HeraldRequestError) || error.status !== 409) throw error;
      deviceId = crypto.randomUUID();
      await attempt();
    }
    const registration: StoredRegistration = {
      deviceId,
      projectUserId,
      endpoint: json.endpoint,
      p256dh: json.keys.p256dh,
      auth: json.keys.auth,
      registeredAt: Date.now(),
    };
    saveRegistration(options.projectId, registration);
    return registration;
  }

  async function refreshNow(projectUserId?: string): Promise<RefreshResult> {
    if (!isSupported()) return { status: 'unsupported' };
    const stored = loadRegistration(options.projectId);
    const user = projectUserId ?? stored?.projectUserId;
    if (!user) return { status: 'not-subscribed' };
    const permission = Notification.permission;
    if (permission !== 'granted')
      return { status: permission === 'denied' ? 'permission-denied' : 'permission-default' };
    const worker = await serviceWorker();
    const subscription = await browserSubscription(worker);
    const json = subscriptionJson(subscription);
    if (
      stored &&
      stored.projectUserId === user &&
      stored.endpoint === json.endpoint &&
      stored.p256dh === json.keys.p256dh &&
      stored.auth === json.keys.auth
    ) {
      // A fresh token for the worker's open reports (a token may expire; the registration did not need one).
      tellWorker(worker, await options.userToken?.(user));
      return { status: 'unchanged', registration: stored };
    }
    return { status: 'registered', registration: await register(user, subscription, worker) };
  }

  const refresh = (projectUserId?: string): Promise<RefreshResult> => {
    // One at a time: a service worker message and a page-load refresh must not race two registrations.
    const next = (refreshing ?? Promise.resolve()).catch(() => undefined).then(() => refreshNow(projectUserId));
    refreshing = next;
    return next;
  };

  if (isSupported())
    navigator.serviceWorker.addEventListener('message', (event: MessageEvent) => {
      const data: unknown = event.data;
      if (data !== null && typeof data === 'object' && (data as { type?: unknown }).type === SUBSCRIPTION_CHANGE)
        refresh().catch(() => undefined);
    });

  return {
    isSupported,
    permissionState,
    canPrompt: () => permissionState() === 'default',

    async subscribe(projectUserId) {
      if (!isSupported()) throw new HeraldWebError('unsupported', 'This browser has no Web Push');
      // First thing, still inside the user gesture: some browsers refuse a prompt asked after an await.
      const permission =
        Notification.permission === 'default'
          ? Notification.requestPermission()
          : Promise.resolve(Notification.permission);
      const answer = await permission;
      if (answer === 'denied') throw new HeraldWebError('permission-denied', 'Notifications are blocked for this site');
      if (answer !== 'granted') throw new HeraldWebError('permission-dismissed', 'The permission prompt was dismissed');
      const worker = await serviceWorker();
      const subscription = await browserSubscription(worker);
      return register(projectUserId, subscription, worker);
    },

    refresh,

    async unsubscribe() {
      const stored = loadRegistration(options.projectId);
      forgetRegistration(options.projectId);
      if (isSupported()) {
        const registration = await navigator.serviceWorker.getRegistration(options.serviceWorkerScope ?? swUrl);
        const subscription = (await registration?.pushManager.getSubscription()) ?? lastSubscription;
        lastSubscription = undefined;
        await subscription?.unsubscribe();
      }
      return { deviceId: stored?.deviceId };
    },

    current: () => loadRegistration(options.projectId),
  };
}
