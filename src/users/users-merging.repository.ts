import { sql } from 'kysely';
import type { AnyKysely, UsersTable } from '../db/database.js';
import { mergedJsonKeyCount, mergeJsonObject } from '../db/dialect.js';
import { preparedInsert } from '../db/prepared.js';
import { MAX_PROPERTIES } from './users.schemas.js';

const excludedProperties = sql`excluded.properties`;
/** A new user's row, as every multi-row users INSERT writes it (also `ensureUsers`, users.repository.ts). */
export const USER_ROW_COLUMNS = [
  'id',
  'project_id',
  'project_user_id',
  'properties',
  'created_at',
  'updated_at',
] as const;

/**
 * Creates users or merges their properties into the stored ones (rule `create-merges`), many rows per statement.
 * Each row is its own upsert, so each user is written whole or not at all; a merge that would
 * exceed the key limit writes nothing and returns no row. Rows of one statement must have distinct
 * users (PostgreSQL cannot update a row twice in one statement).
 */
const mergingInsert = (db: AnyKysely, rows: UsersTable[]) => mergingOnConflict(db, db.insertInto('users').values(rows));

/** An insert into users on the untyped handle the prepared helpers pass (src/db/prepared.ts). */
type UsersInsert = ReturnType<AnyKysely['insertInto']>;

const mergingOnConflict = (db: AnyKysely, insert: UsersInsert) =>
  insert.onConflict((oc) =>
    oc
      .columns(['project_id', 'project_user_id'])
      .doUpdateSet({
        properties: mergeJsonObject(db, 'users.properties', excludedProperties),
        updated_at: sql`excluded.updated_at`,
      })
      .where(mergedJsonKeyCount(db, 'users.properties', excludedProperties), '<=', MAX_PROPERTIES),
  );

/**
 * `mergingInsert` for the import: a returned `id` equal to the row's new id means the user was created;
 * an existing user keeps its id.
 */
export const upsertUsersMerging = preparedInsert<UsersTable, { id: string; project_user_id: string }>(
  USER_ROW_COLUMNS,
  (db, rows) => mergingInsert(db, rows).returning(['id', 'project_user_id']),
  250,
);

export interface MergedUserRow {
  id: string;
  project_id: string;
  project_user_id: string;
  properties: unknown;
}

/** `mergingInsert` answering each written user whole (src/users/user-upserts.ts). */
export const upsertUsersMergingWhole = preparedInsert<UsersTable, MergedUserRow>(
  USER_ROW_COLUMNS,
  (db, rows) => mergingInsert(db, rows).returning(['id', 'project_id', 'project_user_id', 'properties']),
  64,
);

/** One create-or-merge, checked (users.service.ts): the new user's id and the properties to merge. */
export interface UserUpsertRow {
  id: string;
  projectId: string;
  projectUserId: string;
  propertiesJson: string;
  now: number;
}

/** The `match` that `upsertUsersMergingFromArrays` returns with a row: its project and user ids. */
export const userMatch = (projectId: string, projectUserId: string) => `${projectId}\n${projectUserId}`;

/**
 * `mergingInsert` with the rows as one array per column (`unnest`), so one statement text serves every
 * count, inserted in key order (two such statements in flight that share users take them in one
 * order). Returns each written user as `upsertUserMergingStatement` does (`userId`, `projectUserId`,
 * `properties`) and its `match` (`userMatch`), by which a caller pairs the rows with its own. A statement
 * not yet run, for a statement that stores what it returns (src/a2a/tasks/tasks-with-writes.repository.ts).
 * PostgreSQL only (arrays).
 */
export function upsertUsersMergingFromArrays(db: AnyKysely, rows: readonly UserUpsertRow[]) {
  const column = <T>(pick: (row: UserUpsertRow) => T) => rows.map(pick);
  const input = sql`select id, project_id, project_user_id, properties::jsonb, now, now
    from unnest(${column((r) => r.id)}::text[], ${column((r) => r.projectId)}::text[],
      ${column((r) => r.projectUserId)}::text[], ${column((r) => r.propertiesJson)}::text[],
      ${column((r) => r.now)}::bigint[]) as i(id, project_id, project_user_id, properties, now)
    order by project_id, project_user_id`;
  return mergingOnConflict(
    db,
    db
      .insertInto('users')
      .columns([...USER_ROW_COLUMNS])
      .expression(input),
  ).returning([
    'id as userId',
    'project_user_id as projectUserId',
    'properties',
    sql<string>`project_id || chr(10) || project_user_id`.as('match'),
  ]);
}
