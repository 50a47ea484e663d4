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
/** The last counter of each of the few milliseconds before `lastMs` that were left most recently. */
const recentCounters = new Map<number, number>();
const RECENT_MILLISECONDS = 16;
const randomCounter = (): number => Math.floor(Math.random() * 0x800);

/**
 * A UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, a 12-bit counter, then random bits. Rows
 * keyed by it are added at the right edge of their indexes instead of on random pages: on SQLite, a
 * random UUID key makes each new user dirty two more b-tree pages per commit (figures in
 * docs/benchmarks.md, "Profiles behind the code"). It reveals its creation time, which the row's
 * `created_at` holds anyway.
 *
 * The counter (RFC 9562's method 1) starts at a random value below 2,048 in each millisecond and
 * counts up within it, so the ids one process makes in one millisecond sort in the order it made them
 * (lists ordered by id, "newest first", keep that order), up to 2,048 of them. Callers pass the `now`
 * of their request, and work for another request, read at another time, may run between two calls
 * with the same millisecond: the counters of the last 16 milliseconds left are remembered, so a
 * millisecond that comes back goes on counting. Past 2,048, or for a millisecond older than those, the
 * counter is random again. The id always carries `now` itself: message ids name their row's partition
 * (src/push/message-id.ts). 62 random bits remain.
 *
 * Built from `randomUUID()` (a v4 id: its variant bits are already v7's, and Node draws its random
 * bytes from a buffered pool) with the first 64 bits replaced by the time, the version nibble 7 and
 * the counter: cheaper than `randomBytes(16)` per id, and a large send makes an id per message.
 */
export function newTimeOrderedId(now: number = Date.now()): string {
  if (now === lastMs) counter = counter < 0xfff ? counter + 1 : randomCounter();
  else {
    recentCounters.delete(lastMs); // re-added last: the map's order is the order milliseconds were left
    recentCounters.set(lastMs, counter);
    if (recentCounters.size > RECENT_MILLISECONDS) recentCounters.delete(recentCounters.keys().next().value!);
    const earlier = recentCounters.get(now);
    counter = earlier !== undefined && earlier < 0xfff ? earlier + 1 : randomCounter();
    lastMs = now;
  }
  const random = randomUUID();
  const time = now.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${counter.toString(16).padStart(3, '0')}${random.slice(18)}`;
}
