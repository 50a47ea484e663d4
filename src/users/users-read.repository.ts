import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/database.js';
import { indexedTextStartsWith } from '../db/dialect.js';
import { readJson } from '../db/json.js';
import type { Properties } from './users.schemas.js';

export interface StoredUser {
  id: string;
  projectUserId: string;
  properties: Properties;
  createdAt: number;
  updatedAt: number;
}

const userColumns = ['id', 'project_user_id', 'properties', 'created_at', 'updated_at'] as const;

const toUser = (r: {
  id: string;
  project_user_id: string;
  properties: unknown;
  created_at: number;
  updated_at: number;
}): StoredUser => ({
  id: r.id,
  projectUserId: r.project_user_id,
  properties: readJson<Properties>(r.properties),
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

export async function findStoredUser(
  db: Db,
  projectId: string,
  projectUserId: string,
): Promise<StoredUser | undefined> {
  const row = await db
    .selectFrom('users')
    .select(userColumns)
    .where('project_id', '=', projectId)
    .where('project_user_id', '=', projectUserId)
    .executeTakeFirst();
  return row && toUser(row);
}

/**
 * One page of a project's users in `project_user_id` order (the unique index's order), after
 * `after` when given; `filter` is a compiled condition over the `users` row.
 */
export async function listStoredUsers(
  db: Db,
  projectId: string,
  options: { limit: number; after?: string | undefined; prefix?: string | undefined; filter: RawBuilder<boolean> },
): Promise<StoredUser[]> {
  let query = db
    .selectFrom('users')
    .select(userColumns.map((c) => `users.${c}` as const))
    .where('users.project_id', '=', projectId)
    .where(options.filter);
  if (options.after !== undefined) query = query.where('users.project_user_id', '>', options.after);
  if (options.prefix)
    query = query.where(indexedTextStartsWith(db, sql<string>`users.project_user_id`, options.prefix));
  const rows = await query.orderBy('users.project_user_id').limit(options.limit).execute();
  return rows.map(toUser);
}
