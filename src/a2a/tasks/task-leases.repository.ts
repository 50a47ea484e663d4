import type { Db } from '../../db/database.js';

/** A staged task's lease: the instance running its skill renews it; a lapsed one means the instance died. */
export interface A2aTaskLeasesTable {
  task_id: string;
  project_id: string;
  lease_until: number;
  /** Unused since migration 0018: a staged task's key lives on the task (`a2a_tasks.idempotency_key`). */
  idempotency_scope: string | null;
  idempotency_key: string | null;
}

declare module '../../db/database.js' {
  interface Database {
    a2a_task_leases: A2aTaskLeasesTable;
  }
}

/** Written with the task's `working` status, in the same transaction. */
export async function insertTaskLease(db: Db, taskId: string, projectId: string, leaseUntil: number): Promise<void> {
  await db
    .insertInto('a2a_task_leases')
    .values({ task_id: taskId, project_id: projectId, lease_until: leaseUntil })
    .execute();
}

export async function renewTaskLease(db: Db, taskId: string, leaseUntil: number): Promise<void> {
  await db.updateTable('a2a_task_leases').set({ lease_until: leaseUntil }).where('task_id', '=', taskId).execute();
}

export async function deleteTaskLease(db: Db, taskId: string): Promise<void> {
  await db.deleteFrom('a2a_task_leases').where('task_id', '=', taskId).execute();
}

/** Up to `limit` leases that ran out before `now`, oldest first. */
export function findLapsedTaskLeases(db: Db, now: number, limit: number): Promise<A2aTaskLeasesTable[]> {
  return db
    .selectFrom('a2a_task_leases')
    .selectAll()
    .where('lease_until', '<', now)
    .orderBy('lease_until')
    .limit(limit)
    .execute();
}
