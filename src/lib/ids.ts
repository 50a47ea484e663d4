import { randomBytes, randomUUID } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random base62 text; 256 % 62 bias is avoided by rejection sampling. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

export const newId = (): string => randomUUID();

/**
 * A UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. Rows keyed by it are
 * added at the right edge of their indexes instead of on random pages: on SQLite, a random UUID key
 * makes each new user dirty two more b-tree pages per commit (figures in docs/benchmarks.md,
 * "Profiles behind the code"). It reveals its creation time, which the row's `created_at` holds
 * anyway.
 *
 * Built from `randomUUID()` (a v4 id: its variant bits are already v7's, and Node draws its random
 * bytes from a buffered pool) with the first 48 bits replaced by the time and the version nibble by
 * 7: cheaper than `randomBytes(16)` per id, and a large send makes an id per message.
 */
export function newTimeOrderedId(now: number = Date.now()): string {
  const random = randomUUID();
  const time = now.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${random.slice(15)}`;
}
