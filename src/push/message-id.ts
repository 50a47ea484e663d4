/**
 * Message ids are UUIDv7 (src/lib/ids.ts): they sort by time, so the deliveries primary key grows at
 * its right edge instead of splitting pages at random (half the insert cost of UUIDv4 on SQLite),
 * and they are valid `apns-id` values.
 */
export { newTimeOrderedId as newMessageId } from '../lib/ids.js';

const UUID_V7 = /^([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The epoch milliseconds a UUIDv7 message id was made at, or `undefined` for any other id. Herald
 * makes each message's id from its `created_at` (`newMessageId(createdAt)`), so this is the row's
 * partition key: a lookup by id names its day and PostgreSQL reads that day's partition only.
 */
export function messageIdTime(messageId: string): number | undefined {
  const match = UUID_V7.exec(messageId);
  return match ? Number.parseInt(`${match[1]}${match[2]}`, 16) : undefined;
}
