import type { ColumnType } from 'kysely';
import type { Db, JsonColumn } from '../../db/database.js';
import { readJson, writeJson } from '../../db/json.js';
import { paddedList } from '../../db/statement-shapes.js';
import { AppError } from '../../errors.js';
import type { Clock } from '../../lib/clock.js';
import { getUser } from '../../users/users.service.js';
import { parseQuietWindow, type QuietWindow } from './quiet-hours.js';

declare module '../../db/database.js' {
  interface ProjectsTable {
    /** The project's default quiet hours (migration 0033), or null for none. */
    quiet_hours: ColumnType<JsonColumn | null, JsonColumn | null | undefined, JsonColumn | null>;
  }
  interface Database {
    user_quiet_hours: UserQuietHoursTable;
  }
}

export interface UserQuietHoursTable {
  user_id: string;
  project_id: string;
  start_time: string;
  end_time: string;
  updated_at: number;
}

/** Reads a stored window, ignoring one that is not valid (a hand-edited row cannot break a send). */
function storedWindow(value: unknown): QuietWindow | null {
  if (value === null || value === undefined) return null;
  try {
    return parseQuietWindow(value, 'quiet_hours');
  } catch {
    return null;
  }
}

/** The project's default quiet hours (rule `quiet-hours`), or null when it has none. */
export async function projectQuietHours(db: Db, projectId: string): Promise<QuietWindow | null> {
  const row = await db.selectFrom('projects').select('quiet_hours').where('id', '=', projectId).executeTakeFirst();
  if (!row) throw new AppError('not_found', 'PROJECT_NOT_FOUND', `Project ${projectId} does not exist`);
  return row.quiet_hours === null ? null : storedWindow(readJson(row.quiet_hours));
}

/** Sets (a window) or removes (`null`) the project's default; campaigns with `quiet_hours: null` follow it at send time. */
export async function setProjectQuietHours(db: Db, projectId: string, input: unknown): Promise<QuietWindow | null> {
  const window = input === null ? null : parseQuietWindow(input, 'quiet_hours');
  await projectQuietHours(db, projectId);
  await db
    .updateTable('projects')
    .set({ quiet_hours: window === null ? null : writeJson(window) })
    .where('id', '=', projectId)
    .execute();
  return window;
}

/** A user's do-not-disturb window, or null. */
export async function getUserQuietHours(db: Db, projectId: string, projectUserId: string): Promise<QuietWindow | null> {
  const user = await getUser(db, projectId, projectUserId);
  const row = await db
    .selectFrom('user_quiet_hours')
    .select(['start_time', 'end_time'])
    .where('user_id', '=', user.id)
    .executeTakeFirst();
  return row ? { start: row.start_time, end: row.end_time } : null;
}

/** Sets (a window) or removes (`null`) a user's do-not-disturb window, applied on top of every campaign's. */
export async function setUserQuietHours(
  db: Db,
  clock: Clock,
  projectId: string,
  projectUserId: string,
  input: unknown,
): Promise<QuietWindow | null> {
  const window = input === null ? null : parseQuietWindow(input, 'quiet_hours');
  const user = await getUser(db, projectId, projectUserId);
  if (window === null) {
    await db.deleteFrom('user_quiet_hours').where('user_id', '=', user.id).execute();
    return null;
  }
  const row = { start_time: window.start, end_time: window.end, updated_at: clock.now() };
  await db
    .insertInto('user_quiet_hours')
    .values({ user_id: user.id, project_id: projectId, ...row })
    .onConflict((oc) => oc.column('user_id').doUpdateSet(row))
    .execute();
  return window;
}

/** The do-not-disturb windows of these users (internal ids), one read per thousand (a batch). */
export async function userWindows(db: Db, userIds: string[]): Promise<Map<string, QuietWindow>> {
  const out = new Map<string, QuietWindow>();
  for (let i = 0; i < userIds.length; i += 1000) {
    const rows = await db
      .selectFrom('user_quiet_hours')
      .select(['user_id', 'start_time', 'end_time'])
      .where('user_id', 'in', paddedList(userIds.slice(i, i + 1000), Infinity))
      .execute();
    for (const r of rows) {
      const w = storedWindow({ start: r.start_time, end: r.end_time });
      if (w) out.set(r.user_id, w);
    }
  }
  return out;
}
