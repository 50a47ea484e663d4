/**
 * Message ids are UUIDv7 (src/lib/ids.ts): they sort by time, so the deliveries primary key grows at
 * its right edge instead of splitting pages at random (half the insert cost of UUIDv4 on SQLite),
 * and they are valid `apns-id` values.
 */
export { newTimeOrderedId as newMessageId } from '../lib/ids.js';
