import type { Db } from '../db/database.js';
import { readJson } from '../db/json.js';
import { sqlDialect } from '../db/dialect.js';
import { dayStart } from '../db/partitions.js';
import { preparedInsert } from '../db/prepared.js';
import { DAY_MS } from '../lib/clock.js';

export interface NewEventRow {
  id: string;
  project_id: string;
  user_id: string;
  name: string;
  properties: string;
  timestamp: number;
  received_at: number;
}

/** Rows per INSERT statement: a 500-event batch takes a handful of statements (src/db/statement-shapes.ts). */
const EVENTS_PER_STATEMENT = 256;

const insertEventRows = preparedInsert<NewEventRow>(
  ['id', 'project_id', 'user_id', 'name', 'properties', 'timestamp', 'received_at'],
  (db: Db, rows) => db.insertInto('events').values(rows),
  EVENTS_PER_STATEMENT,
);

export async function insertEvents(db: Db, rows: NewEventRow[]): Promise<void> {
  if (rows.length > 0) await insertEventRows(db, rows);
}

/**
 * How far back, in days of receipt, a user's latest events are looked for first (PostgreSQL: the
 * days' partitions only), before all of them. See `listUserEvents`.
 */
const RECEIVED_WINDOWS_DAYS = [3, 32];

/**
 * A user's latest `limit` events by timestamp, newest first. On PostgreSQL, where `events` is
 * partitioned by `received_at`, it first reads only recent days' partitions: an event's timestamp is
 * at most `maxFutureSkewMs` past its receipt (events.service.ts refuses later ones), so every event
 * received before `since` has a timestamp below `since + maxFutureSkewMs`; when the window holds
 * `limit` events and the last of them is at least that recent, no older partition can hold one that
 * ranks above it, and the answer is the same as reading every partition. Otherwise a wider window,
 * then all. SQLite has no partitions: one statement.
 */
export async function listUserEvents(
  db: Db,
  projectId: string,
  userId: string,
  limit: number,
  window: { now: number; maxFutureSkewMs: number },
) {
  const windows = sqlDialect(db).supportsPartitions ? RECEIVED_WINDOWS_DAYS : [];
  for (const days of windows) {
    const since = dayStart(window.now) - days * DAY_MS;
    const rows = await userEventsQuery(db, projectId, userId, limit, since, window.now).execute();
    if (rows.length === limit && Number(rows[limit - 1]!.timestamp) >= since + window.maxFutureSkewMs)
      return rows.map(toEvent);
  }
  return (await userEventsQuery(db, projectId, userId, limit).execute()).map(toEvent);
}

/**
 * The statement of `listUserEvents` (a test reads its plan), limited to events received from `since`
 * until tomorrow's end when given: the days ahead made by retention are empty, and the upper bound
 * leaves them out of the plan while an instance whose clock runs a little ahead is still read.
 */
export function userEventsQuery(db: Db, projectId: string, userId: string, limit: number, since?: number, now = 0) {
  let query = db
    .selectFrom('events')
    .select(['id', 'name', 'properties', 'timestamp'])
    .where('project_id', '=', projectId)
    .where('user_id', '=', userId);
  if (since !== undefined)
    query = query.where('received_at', '>=', since).where('received_at', '<', dayStart(now) + 2 * DAY_MS);
  return query.orderBy('timestamp', 'desc').orderBy('seq', 'desc').limit(limit);
}

const toEvent = (r: { id: string; name: string; properties: unknown; timestamp: number }) => ({
  id: r.id,
  name: r.name,
  properties: readJson<Record<string, unknown>>(r.properties),
  timestamp: Number(r.timestamp),
});
