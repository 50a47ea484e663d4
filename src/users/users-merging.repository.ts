import { sql } from 'kysely';
import type { AnyKysely, UsersTable } from '../db/database.js';
import { mergedJsonKeyCount, mergeJsonObject } from '../db/dialect.js';
import { preparedInsert } from '../db/prepared.js';
import { MAX_PROPERTIES } from './users.schemas.js';

const excludedProperties = sql`excluded.properties`;
const columns = ['id', 'project_id', 'project_user_id', 'properties', 'created_at', 'updated_at'] as const;

/**
 * Creates users or merges their properties into the stored ones (rule `create-merges`), many rows per statement.
 * Each row is its own upsert, so each user is written whole or not at all; a merge that would
 * exceed the key limit writes nothing and returns no row. Rows of one statement must have distinct
 * users (PostgreSQL cannot update a row twice in one statement).
 */
const mergingInsert = (db: AnyKysely, rows: UsersTable[]) =>
  db
    .insertInto('users')
    .values(rows)
    .onConflict((oc) =>
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
  columns,
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
  columns,
  (db, rows) => mergingInsert(db, rows).returning(['id', 'project_id', 'project_user_id', 'properties']),
  64,
);
