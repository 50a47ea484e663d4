import { invalid, type AppError } from '../errors.js';
import { compileValidator, type SchemaError } from '../lib/schema-validator.js';
import { WEBPUSH_MAX_PLAINTEXT_BYTES } from './payload-limits.js';
import { measurePayloads } from './payload-measure.js';
import { SendPushBody } from './push.schemas.js';
import type { PushItem } from './push.types.js';

/** The fixed plain-text 400 of both send endpoints (rules `error-bodies` and `push-items`). */
export const INVALID_PUSH_PARAMETERS = 'Invalid push notification parameters';

const reject = (code: string, index?: number): AppError =>
  invalid(code, INVALID_PUSH_PARAMETERS, index === undefined ? undefined : { index });

const ITEM_RULES: Record<string, string> = {
  type: 'INVALID_PUSH_NOTIFICATION',
  additionalProperties: 'UNKNOWN_FIELD',
  required: 'MISSING_TARGET',
};

/** The rule an item's field breaks, by field and Ajv keyword. */
function fieldRule(field: string, keyword: string): string {
  if (field === 'title' || field === 'body')
    return keyword === 'maxLength' ? `${field.toUpperCase()}_TOO_LONG` : `INVALID_${field.toUpperCase()}`;
  return `INVALID_${field.toUpperCase()}`;
}

/**
 * A target matches one of two shapes, so Ajv reports each shape's failure: an id of the right key
 * with a bad value names that id; a target that is no object is missing; anything else (no key,
 * both, an unknown one) is an invalid target.
 */
function targetRule(errors: readonly SchemaError[]): string {
  const id = errors.map((e) => e.instancePath.split('/')[4]).find((key) => key !== undefined);
  if (id !== undefined) return `INVALID_${id.toUpperCase()}`;
  return errors[0]!.keyword === 'type' ? 'MISSING_TARGET' : 'INVALID_TARGET';
}

/**
 * Ajv's errors for a `SendPushBody` → the 400 with the broken rule as its code (`X-Error-Reason`)
 * and the refused item's index in `details.index`. Ajv stops at the first refused item, so that is
 * the lowest index; `errors` hold more than one entry only where a union reports each branch.
 */
export function pushBodyError(errors: readonly SchemaError[]): AppError {
  const first = errors[0];
  if (first === undefined) return reject('INVALID_PUSH_NOTIFICATION');
  const [, list, at, field] = first.instancePath.split('/');
  if (list === undefined) return reject('MISSING_PUSH_NOTIFICATIONS');
  if (at === undefined) {
    if (first.keyword === 'minItems') return reject('NO_PUSH_NOTIFICATIONS');
    return reject(first.keyword === 'maxItems' ? 'TOO_MANY_PUSH_NOTIFICATIONS' : 'MISSING_PUSH_NOTIFICATIONS');
  }
  const index = Number(at);
  if (field === undefined) return reject(ITEM_RULES[first.keyword] ?? 'INVALID_PUSH_NOTIFICATION', index);
  if (field === 'target') return reject(targetRule(errors), index);
  return reject(fieldRule(field, first.keyword), index);
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

/**
 * The two rules a JSON Schema cannot state plainly, on items the schema accepted: a non-blank
 * `title` or `body`, and a payload that fits at least one provider. The first item that breaks one
 * refuses the whole request, as the schema's refusals do.
 */
export function checkPushContent(items: PushItem[]): PushItem[] {
  items.forEach((item, index) => {
    if (!item.title?.trim() && !item.body?.trim()) throw reject('MISSING_TITLE_AND_BODY', index);
    if (fitsNoProvider(item)) throw reject('PAYLOAD_TOO_LARGE', index);
  });
  return items;
}

const checkBody = compileValidator(SendPushBody);

/**
 * The whole check for items that did not come through a send route (the A2A skill): the route's
 * own schema, then `checkPushContent`.
 */
export function validatePushItems(items: unknown): PushItem[] {
  const errors = checkBody({ push_notifications: items });
  if (errors) throw pushBodyError(errors);
  return checkPushContent(items as PushItem[]);
}
