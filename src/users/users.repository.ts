import type { Db, UsersTable } from '../db/database.js';
import { mergeJsonObject, mergedJsonKeyCount } from '../db/dialect.js';
import { readJson } from '../db/json.js';
import { preparedCommand, preparedInsert, preparedQuery } from '../db/prepared.js';
import { paddedList } from '../db/statement-shapes.js';
import { USER_ROW_COLUMNS } from './users-merging.repository.js';
import type { Properties } from './users.schemas.js';

export interface UserRecord {
  id: string;
  projectUserId: string;
  properties: Properties;
}

/**
 * Inserts the user or merges `propertiesJson` into its stored properties in one statement (rule `create-merges`).
 * The merge only happens while the result keeps at most `maxKeys` keys; otherwise nothing is
 * written and `undefined` is returned.
 */
export async function upsertUserMerging(
  db: Db,
  row: { id: string; projectId: string; projectUserId: string; propertiesJson: string; now: number },
  maxKeys: number,
): Promise<UserRecord | undefined> {
  const [result] = await upsertMerging(db, { ...row, maxKeys });
  return (
    result && {
      id: result.id,
      projectUserId: result.project_user_id,
      properties: readJson<Properties>(result.properties),
    }
  );
}

type UpsertParams = {
  id: string;
  projectId: string;
  projectUserId: string;
  propertiesJson: string;
  now: number;
  maxKeys: number;
};

const upsertMergingWrite = (db: Db, p: UpsertParams) =>
  db
    .insertInto('users')
    .values({
      id: p.id,
      project_id: p.projectId,
      project_user_id: p.projectUserId,
      properties: p.propertiesJson,
      created_at: p.now,
      updated_at: p.now,
    })
    .onConflict((oc) =>
      oc
        .columns(['project_id', 'project_user_id'])
        .doUpdateSet({ properties: mergeJsonObject(db, 'users.properties', p.propertiesJson), updated_at: p.now })
        .where(mergedJsonKeyCount(db, 'users.properties', p.propertiesJson), '<=', p.maxKeys),
    );

const upsertMerging = preparedQuery(
  ['id', 'projectId', 'projectUserId', 'propertiesJson', 'now', 'maxKeys'],
  (db: Db, p: UpsertParams) => upsertMergingWrite(db, p).returning(['id', 'project_user_id', 'properties']),
);

/**
 * `upsertUserMerging` as a statement not yet run, returning the user as A2A's `user-result` names it
 * (`userId`, `projectUserId`, `properties`), for a statement that stores what it returns (`SkillWrite`).
 */
export const upsertUserMergingStatement = (db: Db, row: Omit<UpsertParams, 'maxKeys'>, maxKeys: number) =>
  upsertMergingWrite(db, { ...row, maxKeys }).returning([
    'id as userId',
    'project_user_id as projectUserId',
    'properties',
  ]);

/** Merges into an existing user only; `undefined` when no row changed (absent user or key limit). */
export async function mergeUserProperties(
  db: Db,
  key: { projectId: string; projectUserId: string },
  propertiesJson: string,
  now: number,
  maxKeys: number,
): Promise<{ id: string } | undefined> {
  return db
    .updateTable('users')
    .set({ properties: mergeJsonObject(db, 'users.properties', propertiesJson), updated_at: now })
    .where('project_id', '=', key.projectId)
    .where('project_user_id', '=', key.projectUserId)
    .where(mergedJsonKeyCount(db, 'users.properties', propertiesJson), '<=', maxKeys)
    .returning('id')
    .executeTakeFirst();
}

export async function findUser(db: Db, projectId: string, projectUserId: string): Promise<UserRecord | undefined> {
  const row = await db
    .selectFrom('users')
    .select(['id', 'project_user_id', 'properties'])
    .where('project_id', '=', projectId)
    .where('project_user_id', '=', projectUserId)
    .executeTakeFirst();
  return row && { id: row.id, projectUserId: row.project_user_id, properties: readJson<Properties>(row.properties) };
}

/** Which of the given users exist (one query per call; callers pass at most a request's worth). */
export async function existingProjectUserIds(
  db: Db,
  projectId: string,
  projectUserIds: string[],
): Promise<Set<string>> {
  if (projectUserIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('users')
    .select('project_user_id')
    .where('project_id', '=', projectId)
    // Padded, as the device lookups of the same sends are (src/devices/devices.repository.ts).
    .where('project_user_id', 'in', paddedList(projectUserIds, Infinity))
    .execute();
  return new Set(rows.map((r) => r.project_user_id));
}

export type EnsureParams = { id: string; projectId: string; projectUserId: string; now: number };

const insertUserIfAbsentWrite = (db: Db, p: EnsureParams) =>
  db
    .insertInto('users')
    .values({
      id: p.id,
      project_id: p.projectId,
      project_user_id: p.projectUserId,
      properties: '{}',
      created_at: p.now,
      updated_at: p.now,
    })
    .onConflict((oc) => oc.columns(['project_id', 'project_user_id']).doNothing());

const insertUserIfAbsent = preparedCommand(['id', 'projectId', 'projectUserId', 'now'], insertUserIfAbsentWrite);

/**
 * `ensureUser` as the start of one statement, for a database whose statements may hold a write in
 * WITH (PostgreSQL): the CTE `ensured_user` holds the id the user has, inserted if absent. It holds no
 * row when a concurrent statement inserted the user after this one's snapshot was taken.
 */
export const withEnsuredUser = (db: Db, p: EnsureParams) =>
  db
    .with('inserted_user', () => insertUserIfAbsentWrite(db, p).returning('id'))
    .with('ensured_user', (qc) =>
      qc
        .selectFrom('inserted_user')
        .select('id')
        .unionAll(
          qc
            .selectFrom('users')
            .select('id')
            .where('project_id', '=', p.projectId)
            .where('project_user_id', '=', p.projectUserId),
        ),
    );

const userIdOf = preparedQuery(
  ['projectId', 'projectUserId'],
  (db: Db, p: { projectId: string; projectUserId: string }) =>
    db
      .selectFrom('users')
      .select('id')
      .where('project_id', '=', p.projectId)
      .where('project_user_id', '=', p.projectUserId),
);

/**
 * The internal id of one user, inserting it if absent: one prepared statement for a new user (the
 * id given to the insert, when it inserted), two for an existing one (device registrations and
 * single events).
 */
export async function ensureUser(
  db: Db,
  projectId: string,
  projectUserId: string,
  newId: () => string,
  now: number,
): Promise<string> {
  // The loop only turns again when a concurrent delete of that user committed between the two statements.
  for (;;) {
    const id = newId();
    if ((await insertUserIfAbsent(db, { id, projectId, projectUserId, now })) === 1) return id;
    const [existing] = await userIdOf(db, { projectId, projectUserId });
    if (existing) return existing.id;
  }
}

/**
 * Inserts the users that do not exist yet (an existing one is left as it is), in statements of
 * power-of-two row counts: an event batch of any size shares a few statement texts.
 */
const insertMissingUsers = preparedInsert<UsersTable>(
  USER_ROW_COLUMNS,
  (db, rows) =>
    db
      .insertInto('users')
      .values(rows)
      .onConflict((oc) => oc.columns(['project_id', 'project_user_id']).doNothing()),
  256,
);

/** Inserts users that do not exist yet (no property change for those that do); returns all ids. */
export async function ensureUsers(
  db: Db,
  projectId: string,
  projectUserIds: string[],
  newId: () => string,
  now: number,
): Promise<Map<string, string>> {
  const unique = [...new Set(projectUserIds)];
  if (unique.length === 0) return new Map();
  if (unique.length === 1) return new Map([[unique[0]!, await ensureUser(db, projectId, unique[0]!, newId, now)]]);
  await insertMissingUsers(
    db,
    unique.map((projectUserId) => ({
      id: newId(),
      project_id: projectId,
      project_user_id: projectUserId,
      properties: '{}',
      created_at: now,
      updated_at: now,
    })),
  );
  const rows = await db
    .selectFrom('users')
    .select(['id', 'project_user_id'])
    .where('project_id', '=', projectId)
    // Padded: a batch of any size shares a few statement texts (src/db/statement-shapes.ts).
    .where('project_user_id', 'in', paddedList(unique, Infinity))
    .execute();
  return new Map(rows.map((r) => [r.project_user_id, r.id]));
}

/** Deletes the user; devices and events go with it through `ON DELETE CASCADE`. */
export async function deleteUser(db: Db, projectId: string, projectUserId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('users')
    .where('project_id', '=', projectId)
    .where('project_user_id', '=', projectUserId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
