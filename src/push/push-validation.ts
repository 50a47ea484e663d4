import { invalid } from '../errors.js';
import { isValidProjectUserId } from '../users/users.schemas.js';
import { WEBPUSH_MAX_PLAINTEXT_BYTES } from './payload-limits.js';
import { measurePayloads } from './payload-measure.js';
import type { PushItem } from './push.types.js';

/** The fixed plain-text 400 of both send endpoints (rules `error-bodies` and `push-items`). */
export const INVALID_PUSH_PARAMETERS = 'Invalid push notification parameters';
/** Rule `push-items`: more than this many items is a 400 (500 is the advised size). */
export const MAX_PUSH_ITEMS = 1000;
export const MAX_TITLE_LENGTH = 1024;
export const MAX_BODY_LENGTH = 4096;
export const MAX_URL_LENGTH = 2048;

const ITEM_FIELDS = new Set(['target', 'title', 'body', 'image_url', 'landing_url']);
const TARGET_FIELDS = new Set(['project_user_id', 'device_id']);
const DEVICE_ID = /^[\x21-\x7E]{1,255}$/;

const reject = (code: string, index?: number) =>
  invalid(code, INVALID_PUSH_PARAMETERS, index === undefined ? undefined : { index });

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function isHttpUrl(value: string): boolean {
  if (value.length > MAX_URL_LENGTH) return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== '';
  } catch {
    return false;
  }
}

function checkText(
  item: Record<string, unknown>,
  field: 'title' | 'body',
  max: number,
  index: number,
): string | undefined {
  const value = item[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw reject(`INVALID_${field.toUpperCase()}`, index);
  if (value.length > max) throw reject(`${field.toUpperCase()}_TOO_LONG`, index);
  return value;
}

function checkUrl(item: Record<string, unknown>, field: 'image_url' | 'landing_url', index: number): void {
  const value = item[field];
  if (value !== undefined && (typeof value !== 'string' || !isHttpUrl(value)))
    throw reject(`INVALID_${field.toUpperCase()}`, index);
}

/**
 * Whether the item is over every provider's byte limit (FCM 4,096, APNs 4,096, Web Push 3,993 of
 * plaintext), measured on the very payloads the senders build. Such an item can reach no device
 * and is refused; one that fits some providers only is sent, and the others' deliveries say
 * `_PAYLOAD_TOO_LARGE`.
 */
function fitsNoProvider(item: PushItem): boolean {
  const message = { title: item.title, body: item.body, imageUrl: item.image_url, landingUrl: item.landing_url };
  if (surelyFits(message)) return false;
  return measurePayloads(message).every((p) => !p.fits);
}

/** JSON spends at most 6 bytes on one UTF-16 unit (`\u001f`); every text appears once in each payload. */
const MAX_JSON_BYTES_PER_UNIT = 6;
/** The largest payload of a message whose texts are all one unit long: what the payloads add around the texts. */
const PAYLOAD_OVERHEAD_BYTES = Math.max(
  ...measurePayloads({ title: 'x', body: 'x', imageUrl: 'x', landingUrl: 'x' }).map((p) => p.bytes),
);

/**
 * Whether the message fits the smallest limit (Web Push's) whatever its characters, without building
 * the payloads, which would cost a JSON build per provider for every item of a 500-item request.
 */
function surelyFits(message: { title?: string; body?: string; imageUrl?: string; landingUrl?: string }): boolean {
  const units =
    (message.title?.length ?? 0) +
    (message.body?.length ?? 0) +
    (message.imageUrl?.length ?? 0) +
    (message.landingUrl?.length ?? 0);
  return PAYLOAD_OVERHEAD_BYTES + MAX_JSON_BYTES_PER_UNIT * units <= WEBPUSH_MAX_PLAINTEXT_BYTES;
}

/** Item arrays already validated (the route checks before the idempotency claim, the service again). */
const validated = new WeakSet<unknown[]>();

/**
 * Rule `push-items`, for both endpoints and the A2A skill: 1 to 1,000 items; each has a target with exactly one of
 * `project_user_id` / `device_id`, a non-blank `title` or `body`, and absolute http(s) URLs. Unknown
 * fields are refused, so a misspelt field never sends an empty notification. Any violation rejects
 * the whole request (`AppError` invalid; the code names the rule, `details.index` the item), and so
 * does an item too large for every provider.
 */
export function validatePushItems(items: unknown): PushItem[] {
  if (!Array.isArray(items)) throw reject('MISSING_PUSH_NOTIFICATIONS');
  if (validated.has(items)) return items as PushItem[];
  if (items.length === 0) throw reject('NO_PUSH_NOTIFICATIONS');
  if (items.length > MAX_PUSH_ITEMS) throw reject('TOO_MANY_PUSH_NOTIFICATIONS');
  items.forEach((item: unknown, index) => {
    if (!isObject(item)) throw reject('INVALID_PUSH_NOTIFICATION', index);
    if (Object.keys(item).some((key) => !ITEM_FIELDS.has(key))) throw reject('UNKNOWN_FIELD', index);
    const target = item.target;
    if (!isObject(target)) throw reject('MISSING_TARGET', index);
    const keys = Object.keys(target);
    if (keys.length !== 1 || !TARGET_FIELDS.has(keys[0]!)) throw reject('INVALID_TARGET', index);
    if ('project_user_id' in target && !isValidProjectUserId(target.project_user_id))
      throw reject('INVALID_PROJECT_USER_ID', index);
    if ('device_id' in target && (typeof target.device_id !== 'string' || !DEVICE_ID.test(target.device_id)))
      throw reject('INVALID_DEVICE_ID', index);
    const title = checkText(item, 'title', MAX_TITLE_LENGTH, index);
    const body = checkText(item, 'body', MAX_BODY_LENGTH, index);
    if (!title?.trim() && !body?.trim()) throw reject('MISSING_TITLE_AND_BODY', index);
    checkUrl(item, 'image_url', index);
    checkUrl(item, 'landing_url', index);
    if (fitsNoProvider(item as unknown as PushItem)) throw reject('PAYLOAD_TOO_LARGE', index);
  });
  validated.add(items);
  return items as PushItem[];
}
