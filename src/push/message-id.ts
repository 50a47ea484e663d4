import { randomUUID } from 'node:crypto';

/**
 * Message ids are UUIDv7 (RFC 9562): a millisecond timestamp then random bits. They sort by time,
 * so the deliveries primary key grows at its right edge instead of splitting pages at random
 * (half the insert cost of UUIDv4 on SQLite), and they are valid `apns-id` values.
 *
 * Built from `randomUUID()` (a v4 id: its variant bits are already v7's, and Node draws its random
 * bytes from a buffered pool) with the first 48 bits replaced by the time and the version nibble by
 * 7: a quarter of the cost of `randomBytes(16)` per id, which showed in a 500-item send's profile.
 */
export function newMessageId(now: number = Date.now()): string {
  const random = randomUUID();
  const time = now.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${random.slice(15)}`;
}
