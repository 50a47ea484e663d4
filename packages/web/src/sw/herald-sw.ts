// herald-sw.js: the service worker of @herald/web. Serve it from your site's origin (by default at
// /herald-sw.js) or pull it into a service worker of your own with importScripts('/herald-sw.js').
// A classic script on purpose (no imports, no exports): every browser that has Web Push runs it,
// and importScripts can load it. It never calls skipWaiting or clients.claim, so it does not change
// the lifecycle of a service worker that imports it.

/** What Herald's Web Push provider encrypts (src/push/providers/webpush.ts, `webPushPayload`). */
interface HeraldPushPayload {
  title?: unknown;
  body?: unknown;
  image?: unknown;
  url?: unknown;
  message_id?: unknown;
  data?: unknown;
}

/** Not yet in TypeScript's WebWorker library. */
interface HeraldSubscriptionChangeEvent extends ExtendableEvent {
  readonly oldSubscription?: PushSubscription | null;
  readonly newSubscription?: PushSubscription | null;
}

/** Posted to every window of the origin when the browser replaced the subscription; @herald/web re-registers. */
const HERALD_SUBSCRIPTION_CHANGE = 'herald:pushsubscriptionchange';

/** How a click reports the open: posted by @herald/web's pages, kept in the Cache API (memory dies with the worker). */
interface HeraldOpenConfig {
  baseUrl: string;
  projectId: string;
  publicKey: string;
  userToken?: string;
}
const HERALD_OPEN_CONFIG = 'herald:open-config';
const HERALD_CACHE = 'herald-web';
/** A cache key only: nothing is fetched from it. */
const HERALD_OPEN_CONFIG_KEY = 'https://herald-web.invalid/open-config';

const heraldScope = self as unknown as ServiceWorkerGlobalScope;

/** Only http(s) URLs are opened: a `javascript:` or `data:` landing URL must not run anything. */
function heraldWebUrl(raw: unknown): string | undefined {
  if (typeof raw !== 'string') return undefined;
  try {
    const url = new URL(raw);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

function heraldPayloadOf(data: PushMessageData | null): HeraldPushPayload {
  if (!data) return {};
  try {
    const parsed: unknown = data.json();
    return parsed !== null && typeof parsed === 'object' ? parsed : {};
  } catch {
    // Not JSON: show the text as the body rather than nothing (a push must show a notification).
    return { body: data.text() };
  }
}

heraldScope.addEventListener('push', (event) => {
  const payload = heraldPayloadOf(event.data);
  const text = (value: unknown) => (typeof value === 'string' ? value : '');
  const image = heraldWebUrl(payload.image);
  const messageId = text(payload.message_id);
  const options: NotificationOptions & { image?: string } = {
    body: text(payload.body),
    // The message id as tag: a delivery the push service repeats replaces the shown one.
    ...(messageId ? { tag: messageId } : {}),
    ...(image ? { image } : {}),
    data: { url: heraldWebUrl(payload.url), message_id: messageId, data: payload.data ?? {} },
  };
  event.waitUntil(heraldScope.registration.showNotification(text(payload.title), options));
});

async function heraldOpen(url: string): Promise<unknown> {
  const windows = await heraldScope.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const open = windows.find((client) => client.url === url);
  return open ? open.focus() : heraldScope.clients.openWindow(url);
}

function heraldOpenConfigOf(raw: unknown): HeraldOpenConfig | undefined {
  if (raw === null || typeof raw !== 'object') return undefined;
  const { baseUrl, projectId, publicKey, userToken } = raw as Record<string, unknown>;
  if (typeof baseUrl !== 'string' || typeof projectId !== 'string' || typeof publicKey !== 'string') return undefined;
  if (!heraldWebUrl(baseUrl)) return undefined;
  return { baseUrl, projectId, publicKey, ...(typeof userToken === 'string' && userToken ? { userToken } : {}) };
}

heraldScope.addEventListener('message', (event) => {
  const data: unknown = event.data;
  if (data === null || typeof data !== 'object' || (data as { type?: unknown }).type !== HERALD_OPEN_CONFIG) return;
  const config = heraldOpenConfigOf((data as { config?: unknown }).config);
  if (!config) return;
  event.waitUntil(
    caches.open(HERALD_CACHE).then((cache) => cache.put(HERALD_OPEN_CONFIG_KEY, new Response(JSON.stringify(config)))),
  );
});

/** Herald counts a message's first report only; a failed report loses that open and nothing else. */
async function heraldReportOpen(messageId: string, action: string): Promise<void> {
  try {
    const stored = await (await caches.open(HERALD_CACHE)).match(HERALD_OPEN_CONFIG_KEY);
    const config = heraldOpenConfigOf(stored ? await stored.json() : undefined);
    if (!config) return;
    let base = config.baseUrl;
    while (base.endsWith('/')) base = base.slice(0, -1);
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      'X-Service-Project-ID': config.projectId,
      'X-Service-API-Key': config.publicKey,
    };
    if (config.userToken) headers['X-Service-User-Token'] = config.userToken;
    await fetch(`${base}/api/v1/messages/${encodeURIComponent(messageId)}:open`, {
      method: 'POST',
      headers,
      body: JSON.stringify(action ? { action } : {}),
    });
  } catch {
    // Offline or refused: not counted.
  }
}

heraldScope.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const data: unknown = event.notification.data;
  const fields = data !== null && typeof data === 'object' ? (data as { url?: unknown; message_id?: unknown }) : {};
  const url = heraldWebUrl(fields.url);
  const messageId = typeof fields.message_id === 'string' ? fields.message_id : '';
  // The window opens at once, within the click (openWindow is allowed only then); the report goes beside it.
  const pending: Promise<unknown>[] = [];
  if (url) pending.push(heraldOpen(url));
  if (messageId) pending.push(heraldReportOpen(messageId, event.action));
  if (pending.length > 0) event.waitUntil(Promise.all(pending));
});

async function heraldResubscribe(event: HeraldSubscriptionChangeEvent): Promise<void> {
  // Firefox hands the replacement over; where it does not, subscribe again with the old options
  // (permission is already granted, so no prompt). Either way the pages re-register with Herald.
  if (!event.newSubscription && event.oldSubscription?.options.applicationServerKey) {
    try {
      await heraldScope.registration.pushManager.subscribe({
        userVisibleOnly: true,
        applicationServerKey: event.oldSubscription.options.applicationServerKey,
      });
    } catch {
      // Permission gone: nothing to re-register; Herald prunes the old address on its next send.
    }
  }
  const windows = await heraldScope.clients.matchAll({ type: 'window', includeUncontrolled: true });
  for (const client of windows) client.postMessage({ type: HERALD_SUBSCRIPTION_CHANGE });
}

heraldScope.addEventListener('pushsubscriptionchange', (event) => {
  const change = event as HeraldSubscriptionChangeEvent;
  change.waitUntil(heraldResubscribe(change));
});
