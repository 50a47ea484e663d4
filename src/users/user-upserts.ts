import type { Db } from '../db/database.js';
import type { WriteCommitter } from '../db/group-commit.js';
import { readJson } from '../db/json.js';
import * as repo from './users.repository.js';
import { upsertUsersMergingWhole, type MergedUserRow } from './users-merging.repository.js';
import { MAX_PROPERTIES, type Properties } from './users.schemas.js';

/** One create-or-merge, checked (users.service.ts): the new user's id and the properties to merge. */
export interface UserUpsertRow {
  id: string;
  projectId: string;
  projectUserId: string;
  propertiesJson: string;
  now: number;
}

/** Rule `create-merges` for one user at a time, as POST /api/v1/users makes them. */
export interface UserUpserts {
  /** The user as stored, or `undefined` (nothing written) when the merge would pass the key limit. */
  upsert(row: UserUpsertRow): Promise<repo.UserRecord | undefined>;
}

/** Each upsert one statement through `writes` (the embedded database, where the group commit shares the commit). */
export const separateUserUpserts = (writes: WriteCommitter): UserUpserts => ({
  upsert: (row) => writes.runStatement((db) => repo.upsertUserMerging(db, row, MAX_PROPERTIES)),
});

/**
 * Shared statements in flight for a query pool of `poolSize`: a quarter of it, at least 2 (so one
 * slow statement, waiting on a hot user's row, does not hold every create back) and at most the pool.
 * Fewer in flight share more: with 2 of 10 create-user ran 2.15x as fast as with one statement per
 * request, with 5 of 10 1.89x (docs/decisions.md, Storage).
 */
export const sharedUpsertsInFlight = (poolSize: number): number =>
  Math.min(poolSize, Math.max(2, Math.floor(poolSize / 4)));

/** Rows of one shared statement at most (users-merging.repository.ts compiles powers of two up to it). */
const MAX_ROWS = 64;

interface Waiter {
  row: UserUpsertRow;
  key: string;
  resolve(user: repo.UserRecord | undefined): void;
  reject(error: unknown): void;
}

const userKey = (projectId: string, projectUserId: string) => `${projectId}\n${projectUserId}`;

const toRecord = (row: MergedUserRow): repo.UserRecord => ({
  id: row.id,
  projectUserId: row.project_user_id,
  properties: readJson<Properties>(row.properties),
});

/**
 * Up to `MAX_ROWS` waiting upserts of distinct users, in arrival order, as many as the largest power
 * of two that fits (one compiled statement); a repeated user waits for a later statement, since one
 * statement cannot update a row twice. Takes them out of `queue`.
 */
function takeDistinct(queue: Waiter[]): Waiter[] {
  const keys = new Set<string>();
  const picked: number[] = [];
  for (let i = 0; i < queue.length && picked.length < MAX_ROWS; i++) {
    if (keys.has(queue[i]!.key)) continue;
    keys.add(queue[i]!.key);
    picked.push(i);
  }
  const count = 2 ** Math.floor(Math.log2(picked.length));
  const taken = new Set(picked.slice(0, count));
  const next = picked.slice(0, count).map((i) => queue[i]!);
  const rest = queue.filter((_, i) => !taken.has(i));
  queue.length = 0;
  queue.push(...rest);
  return next;
}

/**
 * Upserts on PostgreSQL, where each statement costs a round trip and a commit: an upsert that arrives
 * while fewer than `maxInFlight` statements of this kind run goes at once, alone, as before; the ones
 * that arrive while that many run wait for the next to finish and go together, distinct users in one
 * multi-row statement (each row still its own upsert, written whole or not at all). Under load
 * requests then share round trips and commits; idle, none waits. When a shared statement fails, each
 * of its upserts runs again alone, so each request gets its own outcome, as before.
 */
export function sharedUserUpserts(db: Db, maxInFlight: number): UserUpserts {
  const queue: Waiter[] = [];
  let inFlight = 0;

  async function runAlone(waiter: Waiter): Promise<void> {
    try {
      waiter.resolve(await repo.upsertUserMerging(db, waiter.row, MAX_PROPERTIES));
    } catch (error) {
      waiter.reject(error);
    }
  }

  async function runTogether(waiters: Waiter[]): Promise<void> {
    let rows: MergedUserRow[];
    try {
      rows = await upsertUsersMergingWhole(
        db,
        waiters.map(({ row }) => ({
          id: row.id,
          project_id: row.projectId,
          project_user_id: row.projectUserId,
          properties: row.propertiesJson,
          created_at: row.now,
          updated_at: row.now,
        })),
      );
    } catch {
      // Nothing of the statement was written: each upsert again on its own, for its own outcome.
      await Promise.all(waiters.map(runAlone));
      return;
    }
    const written = new Map(rows.map((row) => [userKey(row.project_id, row.project_user_id), row]));
    for (const waiter of waiters) {
      const row = written.get(waiter.key);
      waiter.resolve(row && toRecord(row));
    }
  }

  function sendWaiting(): void {
    while (inFlight < maxInFlight && queue.length > 0) {
      const waiters = takeDistinct(queue);
      inFlight++;
      void (waiters.length === 1 ? runAlone(waiters[0]!) : runTogether(waiters)).finally(() => {
        inFlight--;
        sendWaiting();
      });
    }
  }

  return {
    upsert(row) {
      return new Promise((resolve, reject) => {
        queue.push({ row, key: userKey(row.projectId, row.projectUserId), resolve, reject });
        sendWaiting();
      });
    },
  };
}
