import type { Db } from '../db/database.js';

export interface IdempotencyTable {
  project_id: string;
  scope: string;
  idempotency_key: string;
  request_hash: string;
  state: 'in_progress' | 'completed';
  response_status: number | null;
  response_body: string | null;
  created_at: number;
  expires_at: number;
}

declare module '../db/database.js' {
  interface Database {
    idempotency_keys: IdempotencyTable;
  }
}

export interface IdempotencyKeyRef {
  projectId: string;
  scope: string;
  key: string;
}

const where = (ref: IdempotencyKeyRef) => (db: Db) =>
  db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('project_id', '=', ref.projectId)
    .where('scope', '=', ref.scope)
    .where('idempotency_key', '=', ref.key);

/** Claims the key; `false` when a row for it already exists. */
export async function claimKey(
  db: Db,
  ref: IdempotencyKeyRef,
  requestHash: string,
  now: number,
  expiresAt: number,
): Promise<boolean> {
  const result = await db
    .insertInto('idempotency_keys')
    .values({
      project_id: ref.projectId,
      scope: ref.scope,
      idempotency_key: ref.key,
      request_hash: requestHash,
      state: 'in_progress',
      response_status: null,
      response_body: null,
      created_at: now,
      expires_at: expiresAt,
    })
    .onConflict((oc) => oc.columns(['project_id', 'scope', 'idempotency_key']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

export function findKey(db: Db, ref: IdempotencyKeyRef) {
  return where(ref)(db).executeTakeFirst();
}

export async function completeKey(db: Db, ref: IdempotencyKeyRef, status: number, body: string): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ state: 'completed', response_status: status, response_body: body })
    .where('project_id', '=', ref.projectId)
    .where('scope', '=', ref.scope)
    .where('idempotency_key', '=', ref.key)
    .execute();
}

/** Removes the key when it still has the given creation time (so a newer claim is never removed). */
export async function releaseKey(db: Db, ref: IdempotencyKeyRef, createdAt?: number): Promise<void> {
  let query = db
    .deleteFrom('idempotency_keys')
    .where('project_id', '=', ref.projectId)
    .where('scope', '=', ref.scope)
    .where('idempotency_key', '=', ref.key);
  if (createdAt !== undefined) query = query.where('created_at', '=', createdAt);
  await query.execute();
}

export async function deleteExpiredKeys(db: Db, now: number): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}
