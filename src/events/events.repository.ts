import type { Db } from '../db/database.js';
import { readJson } from '../db/json.js';
import { preparedInsert } from '../db/prepared.js';

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

export async function listUserEvents(db: Db, projectId: string, userId: string, limit: number) {
  const rows = await db
    .selectFrom('events')
    .select(['id', 'name', 'properties', 'timestamp'])
    .where('project_id', '=', projectId)
    .where('user_id', '=', userId)
    .orderBy('timestamp', 'desc')
    .orderBy('seq', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    properties: readJson<Record<string, unknown>>(r.properties),
    timestamp: Number(r.timestamp),
  }));
}
