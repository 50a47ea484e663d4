import type { Db } from '../db/database.js';
import { writeJson } from '../db/json.js';
import { AppError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import { ensureUsers, getUser } from '../users/users.service.js';
import * as repo from './events.repository.js';
import type { EventInput } from './events.schemas.js';

export interface TrackedEvent {
  eventId: string;
  projectUserId: string;
  name: string;
  timestamp: number;
}

/** How far ahead of the server clock an event's timestamp may lie (client clocks drift). */
const MAX_FUTURE_SKEW_MS = 24 * 60 * 60 * 1000;
const EARLIEST_TIMESTAMP = Date.UTC(2000, 0, 1);

function parseTimestamp(value: string | number | undefined, now: number, index: number): number {
  if (value === undefined) return now;
  const ms = typeof value === 'number' ? value : /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms) || ms < EARLIEST_TIMESTAMP || ms > now + MAX_FUTURE_SKEW_MS) {
    throw new AppError('invalid', 'INVALID_EVENT_TIMESTAMP', `events[${index}].timestamp must be an ISO 8601 date-time or epoch milliseconds between 2000 and now`);
  }
  return Math.trunc(ms);
}

/**
 * R9: stores events with their properties and timestamp (default: now), creating users that do
 * not exist yet. One transaction for the whole batch: all stored or none. Serves REST and the
 * `track-event` skill alike.
 */
export async function trackEvents(db: Db, clock: Clock, projectId: string, events: EventInput[]): Promise<TrackedEvent[]> {
  const now = clock.now();
  const timestamps = events.map((e, i) => parseTimestamp(e.timestamp, now, i));
  return db.transaction().execute(async (trx) => {
    const userIds = await ensureUsers(trx, clock, projectId, events.map((e) => e.project_user_id));
    const rows = events.map((e, i) => ({
      id: newId(),
      project_id: projectId,
      user_id: userIds.get(e.project_user_id)!,
      name: e.name,
      properties: writeJson(e.properties ?? {}),
      timestamp: timestamps[i]!,
      received_at: now,
    }));
    await repo.insertEvents(trx, rows);
    return rows.map((r, i) => ({ eventId: r.id, projectUserId: events[i]!.project_user_id, name: r.name, timestamp: r.timestamp }));
  });
}

export async function listUserEvents(db: Db, projectId: string, projectUserId: string, limit = 100) {
  const user = await getUser(db, projectId, projectUserId);
  return repo.listUserEvents(db, projectId, user.id, limit);
}
