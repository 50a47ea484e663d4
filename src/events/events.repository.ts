import type { Db } from '../db/database.js';
import { readJson } from '../db/json.js';

export interface NewEventRow {
  id: string;
  project_id: string;
  user_id: string;
  name: string;
  properties: string;
  timestamp: number;
  received_at: number;
}

export async function insertEvents(db: Db, rows: NewEventRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('events').values(rows).execute();
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
