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

/** The millisecond of the last time-ordered id this process made, and that id's counter. */
let lastMs = -1;
let counter = 0;

/**
 * A UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, a 12-bit counter, then random bits. Rows
 * keyed by it are added at the right edge of their indexes instead of on random pages: on SQLite, a
 * random UUID key makes each new user dirty two more b-tree pages per commit (figures in
 * docs/benchmarks.md, "Profiles behind the code"). It reveals its creation time, which the row's
 * `created_at` holds anyway.
 *
 * The counter (RFC 9562's method 1) starts at a random value below 2,048 in each millisecond and
 * counts up within it, so the ids one process makes in one millisecond sort in the order it made them
 * (lists ordered by id, "newest first", keep that order), up to 2,048 of them; past that, or for a
 * millisecond given out of order, the counter is random again. 62 random bits remain.
 *
 * Built from `randomUUID()` (a v4 id: its variant bits are already v7's, and Node draws its random
 * bytes from a buffered pool) with the first 64 bits replaced by the time, the version nibble 7 and
 * the counter: cheaper than `randomBytes(16)` per id, and a large send makes an id per message.
 */
export function newTimeOrderedId(now: number = Date.now()): string {
  if (now === lastMs && counter < 0xfff) counter++;
  else {
    lastMs = now;
    counter = Math.floor(Math.random() * 0x800);
  }
  const random = randomUUID();
  const time = now.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${counter.toString(16).padStart(3, '0')}${random.slice(18)}`;
}
