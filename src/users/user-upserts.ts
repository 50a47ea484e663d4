import type { WarnLog } from '../logger.js';
import type { Db } from '../db/database.js';
import type { WriteCommitter } from '../db/group-commit.js';
import { isExpectedFallback } from '../db/one-statement.js';
import { sharedStatements } from '../db/shared-statements.js';
import { readJson } from '../db/json.js';
import * as repo from './users.repository.js';
import {
  upsertUsersMergingWhole,
  userMatch,
  type MergedUserRow,
  type UserUpsertRow,
} from './users-merging.repository.js';
import { MAX_PROPERTIES, type Properties } from './users.schemas.js';

export type { UserUpsertRow } from './users-merging.repository.js';

/** Rule `create-merges` for one user at a time, as POST /api/v1/users makes them. */
export interface UserUpserts {
  /** The user as stored, or `undefined` (nothing written) when the merge would pass the key limit. */
  upsert(row: UserUpsertRow): Promise<repo.UserRecord | undefined>;
}

/** Each upsert one statement through `writes` (the embedded database, where the group commit shares the commit). */
export const separateUserUpserts = (writes: WriteCommitter): UserUpserts => ({
  upsert: (row) => writes.runStatement((db) => repo.upsertUserMerging(db, row, MAX_PROPERTIES)),
});

/** Rows of one shared statement at most (users-merging.repository.ts compiles powers of two up to it). */
const MAX_ROWS = 64;

const toRecord = (row: MergedUserRow): repo.UserRecord => ({
  id: row.id,
  projectUserId: row.project_user_id,
  properties: readJson<Properties>(row.properties),
});

/**
 * Upserts on PostgreSQL, sharing statements under load (src/db/shared-statements.ts): distinct users
 * in one multi-row statement, each row still its own upsert, written whole or not at all; a row the
 * statement did not return is a merge past the key limit, answered as alone. `log` hears a shared
 * statement's unexpected failures.
 */
export function sharedUserUpserts(db: Db, maxInFlight: number, log: WarnLog): UserUpserts {
  const upsert = sharedStatements<UserUpsertRow, repo.UserRecord | undefined>({
    maxInFlight,
    maxItems: MAX_ROWS,
    keysOf: (row) => [userMatch(row.projectId, row.projectUserId)],
    alone: (row) => repo.upsertUserMerging(db, row, MAX_PROPERTIES),
    together: async (rows) => {
      const written = await upsertUsersMergingWhole(
        db,
        rows.map((row) => ({
          id: row.id,
          project_id: row.projectId,
          project_user_id: row.projectUserId,
          properties: row.propertiesJson,
          created_at: row.now,
          updated_at: row.now,
        })),
      );
      const byUser = new Map(written.map((row) => [userMatch(row.project_id, row.project_user_id), row]));
      return rows.map((row) => {
        const stored = byUser.get(userMatch(row.projectId, row.projectUserId));
        return stored && toRecord(stored);
      });
    },
    isExpected: isExpectedFallback,
    unexpected: (error) => log.warn({ err: error }, 'shared user upsert failed; ran each alone'),
  });
  return { upsert };
}
