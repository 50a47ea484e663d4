import type { Logger } from 'pino';
import type { Db } from '../../db/database.js';
import type { IdempotencyKeyRef } from '../../idempotency/idempotency.repository.js';
import { releaseKey } from '../../idempotency/idempotency.repository.js';
import { newId } from '../../lib/ids.js';
import { isTerminal } from '../model.js';
import { advanceTask, type StoreContext } from './task-store.js';
import { findTask } from './tasks.repository.js';

export interface A2aTaskLeasesTable {
  task_id: string;
  project_id: string;
  lease_until: number;
  idempotency_scope: string | null;
  idempotency_key: string | null;
}

declare module '../../db/database.js' {
  interface Database {
    a2a_task_leases: A2aTaskLeasesTable;
  }
}

/** How long a staged task's instance owns it without renewing (renewed every third of it). */
export const TASK_LEASE_MS = 30_000;

/** Written with the task's `working` status, in the same transaction. */
export async function insertTaskLease(
  db: Db,
  taskId: string,
  projectId: string,
  leaseUntil: number,
  key: IdempotencyKeyRef | undefined,
): Promise<void> {
  await db
    .insertInto('a2a_task_leases')
    .values({
      task_id: taskId,
      project_id: projectId,
      lease_until: leaseUntil,
      idempotency_scope: key?.scope ?? null,
      idempotency_key: key?.key ?? null,
    })
    .execute();
}

export async function deleteTaskLease(db: Db, taskId: string): Promise<void> {
  await db.deleteFrom('a2a_task_leases').where('task_id', '=', taskId).execute();
}

/** Renews the lease every third of `leaseMs` while the skill runs; `stop()` ends renewing and drops the lease. */
export function keepTaskLease(
  db: Db,
  taskId: string,
  now: () => number,
  leaseMs: number,
  logger?: Pick<Logger, 'warn'>,
): { stop(): Promise<void> } {
  const timer = setInterval(
    () => {
      db.updateTable('a2a_task_leases')
        .set({ lease_until: now() + leaseMs })
        .where('task_id', '=', taskId)
        .execute()
        .catch((error: unknown) => logger?.warn({ err: error, task_id: taskId }, 'could not renew the task lease'));
    },
    Math.max(1, Math.floor(leaseMs / 3)),
  );
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await deleteTaskLease(db, taskId).catch((error: unknown) =>
        logger?.warn({ err: error, task_id: taskId }, 'could not drop the task lease; the reaper will'),
      );
    },
  };
}

export type ReaperContext = Omit<StoreContext, 'projectId'> & { logger?: Pick<Logger, 'warn' | 'error'> };

/**
 * Fails the tasks whose lease lapsed (their instance died mid-skill) with a reason, and releases
 * their idempotency keys so the client's retry runs at once instead of meeting 409 until the key
 * is abandoned. A task already terminal (its instance died after finishing) only loses its lease.
 * Safe on many instances at once: the status append is conditional, the deletes idempotent.
 */
export async function reapLapsedTasks(ctx: ReaperContext, limit = 100): Promise<number> {
  const lapsed = await ctx.db
    .selectFrom('a2a_task_leases')
    .selectAll()
    .where('lease_until', '<', ctx.clock.now())
    .orderBy('lease_until')
    .limit(limit)
    .execute();
  let reaped = 0;
  for (const lease of lapsed) {
    const store: StoreContext = { ...ctx, projectId: lease.project_id };
    const record = await findTask(ctx.db, lease.project_id, lease.task_id);
    if (record && !isTerminal(record.status.state)) {
      const message = {
        messageId: newId(),
        role: 'agent' as const,
        parts: [
          { text: 'The instance running this task stopped before the task finished; send the message again to retry' },
        ],
        taskId: record.id,
        contextId: record.contextId,
        metadata: { reason: 'INSTANCE_LOST' },
      };
      const result = await advanceTask(
        store,
        {
          task: {
            id: record.id,
            contextId: record.contextId,
            status: record.status,
            artifacts: record.artifacts,
            history: record.history,
          },
          seq: record.seq,
          statusHistory: record.statusHistory,
        },
        { state: 'failed', message, timestamp: ctx.clock.now() },
      );
      if (result.changed) {
        reaped += 1;
        ctx.logger?.warn({ task_id: record.id }, 'failed an A2A task whose instance was lost');
      }
    }
    if (lease.idempotency_scope !== null && lease.idempotency_key !== null) {
      await ctx.db.transaction().execute(async (trx) => {
        // Only a reservation still in progress: a completed key keeps replaying its task.
        const key = { projectId: lease.project_id, scope: lease.idempotency_scope!, key: lease.idempotency_key! };
        const held = await trx
          .selectFrom('idempotency_keys')
          .select('created_at')
          .where('project_id', '=', key.projectId)
          .where('scope', '=', key.scope)
          .where('idempotency_key', '=', key.key)
          .where('state', '=', 'in_progress')
          .executeTakeFirst();
        if (held) await releaseKey(trx, key, Number(held.created_at));
      });
    }
    await deleteTaskLease(ctx.db, lease.task_id);
  }
  return reaped;
}

/** Runs the reaper every `intervalMs` (a third of the lease by default) until `stop()`. */
export function startTaskReaper(ctx: ReaperContext, intervalMs = TASK_LEASE_MS / 3): { stop(): void } {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    reapLapsedTasks(ctx)
      .catch((error: unknown) => ctx.logger?.warn({ err: error }, 'reaping lapsed A2A tasks failed'))
      .finally(() => (running = false));
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
