import type { Db } from '../db/database.js';
import { writeJson } from '../db/json.js';
import { AppError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { newTimeOrderedId } from '../lib/ids.js';
import { assertValidProjectUserId, assertValidProperties, ensureUsers, getUser } from '../users/users.service.js';
import * as repo from './events.repository.js';
import { EVENT_NAME_PATTERN, type EventInput } from './events.schemas.js';

export interface TrackedEvent {
  eventId: string;
  projectUserId: string;
  name: string;
  timestamp: number;
}

/** An event as stored, for the features that react to events (event-triggered campaigns). */
export interface StoredEvent extends TrackedEvent {
  userId: string;
  properties: Record<string, unknown>;
  /** `properties` as stored in the events row. */
  propertiesJson: string;
  receivedAt: number;
}

/**
 * Runs in the transaction that stores the events, after them, so what it writes commits with them
 * (all or none): event-triggered campaigns give it from above (src/herald.ts), events stay below them.
 */
export type EventObserver = (db: Db, projectId: string, events: StoredEvent[]) => Promise<void>;

/** Observers run in turn, in the events' transaction (event-triggered campaigns, then conversions). */
export const allObservers =
  (...observers: EventObserver[]): EventObserver =>
  async (db, projectId, events) => {
    for (const observe of observers) await observe(db, projectId, events);
  };

/** How far ahead of the server clock an event's timestamp may lie (client clocks drift). */
const MAX_FUTURE_SKEW_MS = 24 * 60 * 60 * 1000;
const EARLIEST_TIMESTAMP = Date.UTC(2000, 0, 1);
/** RFC 3339 / ISO 8601: a date, optionally a time (seconds and fraction optional) and an offset. */
const ISO_TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))?)?$/;
const eventNameRegExp = new RegExp(EVENT_NAME_PATTERN, 'u');

/**
 * Epoch milliseconds of an ISO 8601 timestamp, or NaN. Parsed by hand rather than `Date.parse`,
 * which rolls impossible dates over (Feb 30 becomes Mar 1) and reads offset-less times in the
 * server's time zone; here a missing offset means UTC.
 */
export function parseIsoTimestamp(text: string): number {
  const m = ISO_TIMESTAMP.exec(text);
  if (!m) return Number.NaN;
  const [year, month, day, hour = 0, minute = 0, second = 0] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((part) =>
    part === undefined ? undefined : Number(part),
  );
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  if (month! < 1 || month! > 12 || hour > 23 || minute > 59 || second > 59) return Number.NaN;
  const local = Date.UTC(year!, month! - 1, day, hour, minute, second, millis);
  if (new Date(local).getUTCDate() !== day) return Number.NaN; // day 0, or past the month's end
  if (m[9] === undefined) return local;
  const offsetHours = Number(m[10]);
  const offsetMinutes = Number(m[11]);
  if (offsetHours > 23 || offsetMinutes > 59) return Number.NaN;
  return local - (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
}

function parseTimestamp(value: string | number | undefined, now: number, index: number): number {
  if (value === undefined) return now;
  const ms = typeof value === 'number' ? value : parseIsoTimestamp(value);
  if (!Number.isFinite(ms) || ms < EARLIEST_TIMESTAMP || ms > now + MAX_FUTURE_SKEW_MS) {
    throw new AppError(
      'invalid',
      'INVALID_EVENT_TIMESTAMP',
      `events[${index}].timestamp must be an ISO 8601 date-time or epoch milliseconds between 2000 and now`,
    );
  }
  return Math.trunc(ms);
}

/** Rule `events` for every transport (the REST schema checks the same first). */
function assertValidEvent(event: EventInput, index: number): void {
  assertValidProjectUserId(event.project_user_id);
  if (typeof event.name !== 'string' || [...event.name].length > 255 || !eventNameRegExp.test(event.name)) {
    throw new AppError(
      'invalid',
      'INVALID_EVENT_NAME',
      `events[${index}].name must be 1 to 255 characters without control characters`,
    );
  }
  assertValidProperties(event.properties ?? {});
}

/**
 * Rule `events`: checks the events at once (throwing a 400's error) and answers the database work that stores
 * them with their properties and timestamp (default: now), creating users that do not exist yet.
 * The work is pure database work for one transaction (all stored or none), safe to run again after a
 * rollback: a unit for the group commit.
 */
export function eventsToStore(
  clock: Clock,
  projectId: string,
  events: EventInput[],
  observe?: EventObserver,
): (db: Db) => Promise<TrackedEvent[]> {
  const now = clock.now();
  events.forEach(assertValidEvent);
  const timestamps = events.map((e, i) => parseTimestamp(e.timestamp, now, i));
  return async (db) => {
    const userIds = await ensureUsers(
      db,
      clock,
      projectId,
      events.map((e) => e.project_user_id),
    );
    const rows = events.map((e, i) => ({
      // Time-ordered, so each new event (and its pending sends) lands at the right edge of the id indexes (src/lib/ids.ts).
      id: newTimeOrderedId(now),
      project_id: projectId,
      user_id: userIds.get(e.project_user_id)!,
      name: e.name,
      properties: writeJson(e.properties ?? {}),
      timestamp: timestamps[i]!,
      received_at: now,
    }));
    await repo.insertEvents(db, rows);
    const stored = rows.map((r, i): StoredEvent => ({
      eventId: r.id,
      projectUserId: events[i]!.project_user_id,
      name: r.name,
      timestamp: r.timestamp,
      userId: r.user_id,
      properties: events[i]!.properties ?? {},
      propertiesJson: r.properties,
      receivedAt: now,
    }));
    if (observe) await observe(db, projectId, stored);
    return stored;
  };
}

/** `eventsToStore` run in a transaction of its own, or in `db` when it is one (the `track-event` skill). */
export async function trackEvents(
  db: Db,
  clock: Clock,
  projectId: string,
  events: EventInput[],
  observe?: EventObserver,
): Promise<TrackedEvent[]> {
  const store = eventsToStore(clock, projectId, events, observe);
  return db.isTransaction ? store(db) : db.transaction().execute(store);
}

export async function listUserEvents(db: Db, clock: Clock, projectId: string, projectUserId: string, limit = 100) {
  const user = await getUser(db, projectId, projectUserId);
  return repo.listUserEvents(db, projectId, user.id, limit, { now: clock.now(), maxFutureSkewMs: MAX_FUTURE_SKEW_MS });
}

/** A user's latest events by internal user id, newest first (the caller already holds the user). */
export function recentEventsOfUserId(db: Db, clock: Clock, projectId: string, userId: string, limit: number) {
  return repo.listUserEvents(db, projectId, userId, limit, { now: clock.now(), maxFutureSkewMs: MAX_FUTURE_SKEW_MS });
}
