import { randomBytes } from 'node:crypto';

/**
 * Message ids are UUIDv7 (RFC 9562): a millisecond timestamp then random bits. They sort by time,
 * so the deliveries primary key grows at its right edge instead of splitting pages at random
 * (half the insert cost of UUIDv4 on SQLite), and they are valid `apns-id` values.
 */
export function newMessageId(now: number = Date.now()): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
