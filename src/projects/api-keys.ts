import { hash, timingSafeEqual } from 'node:crypto';
import { randomBase62 } from '../lib/ids.js';

export type KeyKind = 'secret' | 'public';

export const KEY_PREFIX: Record<KeyKind, string> = { secret: 'svc_sk_', public: 'svc_pk_' };
/** Characters of a key kept in clear: enough to find its row and to recognise it in a listing. */
const LOOKUP_PREFIX_LENGTH = 15;

export interface GeneratedKey {
  key: string;
  prefix: string;
  digest: string;
}

export function generateKey(kind: KeyKind): GeneratedKey {
  const key = KEY_PREFIX[kind] + randomBase62(40);
  return { key, prefix: lookupPrefix(key), digest: digestKey(key) };
}

export const lookupPrefix = (key: string): string => key.slice(0, LOOKUP_PREFIX_LENGTH);

export const digestKey = (key: string): string => hash('sha256', key, 'hex');

/** Compares two hex digests in constant time. */
export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}
