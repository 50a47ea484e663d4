import { randomBytes } from 'node:crypto';
import { fcmContentBytes } from '../payload-limits.js';
import type { PushMessage } from '../push.types.js';

/**
 * The FCM HTTP v1 message for one device; every value is sent once. Mapping (docs/providers.md):
 * - `title`, `body`, `imageUrl` → `notification.title/body/image` (FCM shows the image on every
 *   platform; iOS needs `mutable-content: 1` so the service extension can fetch it);
 * - `landingUrl` → `webpush.fcm_options.link` for web devices (the browser opens it), else `data.landing_url`;
 * - Herald's message id → `data.herald_message_id`; caller `data` is copied (string values).
 */
export function fcmMessage(
  token: string,
  message: PushMessage,
  messageId: string,
  platform?: string,
): { message: Record<string, unknown> } {
  const notification: Record<string, string> = {};
  if (message.title) notification.title = message.title;
  if (message.body) notification.body = message.body;
  if (message.imageUrl) notification.image = message.imageUrl;
  const data: Record<string, string> = { ...message.data, herald_message_id: messageId };
  const webLink = platform === 'web' && message.landingUrl?.startsWith('https://');
  if (message.landingUrl && !webLink) data.landing_url = message.landingUrl;
  return {
    message: {
      token,
      ...(Object.keys(notification).length > 0 ? { notification } : {}),
      data,
      ...(webLink ? { webpush: { fcm_options: { link: message.landingUrl } } } : {}),
      ...(message.imageUrl ? { apns: { payload: { aps: { 'mutable-content': 1 } } } } : {}),
    },
  };
}

/** Stand-ins for the token and message id while a message's JSON is built once (random: no text can forge them). */
const TOKEN_SLOT = `herald-token-${randomBytes(12).toString('hex')}`;
const ID_SLOT = `herald-id-${randomBytes(12).toString('hex')}`;

interface FcmBodyTemplate {
  /** Bytes FCM counts against its limit (the message without its token), less the message id's. */
  contentBytes: number;
  body(token: string, messageId: string): string;
}

const templates = new WeakMap<PushMessage, { web?: FcmBodyTemplate; other?: FcmBodyTemplate }>();

/** `{"message":}` and `"token":` around the token, and the comma after it: what FCM does not count. */
const ENVELOPE_BYTES = '{"message":}'.length + '"token":'.length + 1;

/**
 * The request body for one device and the bytes FCM counts of it (`fcmContentBytes`). A message's
 * first send is stringified directly: a personalised campaign message goes to one device, and
 * building a template for it would cost a second stringify and two splits per send. A message sent
 * again (a user's next device, a REST item with many devices) is completed from its template.
 */
export function fcmBody(
  message: PushMessage,
  platform: string | undefined,
  token: string,
  messageId: string,
): { body: string; contentBytes: number } {
  const entry = templates.get(message);
  if (entry) {
    const template = fcmBodyTemplate(message, platform);
    return {
      body: template.body(token, messageId),
      contentBytes: template.contentBytes + Buffer.byteLength(JSON.stringify(messageId)) - 2,
    };
  }
  templates.set(message, {});
  const body = JSON.stringify(fcmMessage(token, message, messageId, platform));
  return { body, contentBytes: Buffer.byteLength(body) - ENVELOPE_BYTES - Buffer.byteLength(JSON.stringify(token)) };
}

/**
 * The JSON of `fcmMessage` for one message, built and measured once and then completed per device
 * with its token and message id, so a send to many devices stringifies and measures it once.
 * Exactly `JSON.stringify(fcmMessage(token, message, messageId, platform))`.
 */
export function fcmBodyTemplate(message: PushMessage, platform?: string): FcmBodyTemplate {
  const kind = platform === 'web' ? 'web' : 'other';
  let entry = templates.get(message);
  const cached = entry?.[kind];
  if (cached) return cached;
  const built = buildTemplate(message, platform);
  if (!entry) templates.set(message, (entry = {}));
  entry[kind] = built;
  return built;
}

function buildTemplate(message: PushMessage, platform: string | undefined): FcmBodyTemplate {
  const json = JSON.stringify(fcmMessage(TOKEN_SLOT, message, ID_SLOT, platform));
  const [head, rest, ...more] = json.split(`"${TOKEN_SLOT}"`);
  const [middle, tail, ...extra] = rest?.split(ID_SLOT) ?? [];
  if (more.length > 0 || extra.length > 0 || head === undefined || middle === undefined || tail === undefined)
    return {
      contentBytes: fcmContentBytes(fcmMessage('', message, '', platform)),
      body: (token, messageId) => JSON.stringify(fcmMessage(token, message, messageId, platform)),
    };
  // What FCM counts (`fcmContentBytes`) is the inside of `{"message":…}` without `"token":"…",` (the
  // token is the first key and `data` always follows it).
  const uncounted = '{"message":}'.length + `"token":"${TOKEN_SLOT}",`.length;
  return {
    contentBytes: Buffer.byteLength(json) - uncounted - ID_SLOT.length,
    body: (token, messageId) =>
      `${head}${JSON.stringify(token)}${middle}${JSON.stringify(messageId).slice(1, -1)}${tail}`,
  };
}
