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

heraldScope.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const data: unknown = event.notification.data;
  const url = heraldWebUrl(data !== null && typeof data === 'object' ? (data as { url?: unknown }).url : undefined);
  if (url) event.waitUntil(heraldOpen(url));
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
