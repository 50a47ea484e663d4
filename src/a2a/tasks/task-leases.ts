import type { Logger } from 'pino';
import type { Db } from '../../db/database.js';
import { newId } from '../../lib/ids.js';
import { isTerminal } from '../model.js';
import { advanceTask, type StoreContext } from './task-store.js';
import { deleteTaskLease, findLapsedTaskLeases, renewTaskLease } from './task-leases.repository.js';
import { findTask, releaseTaskKey } from './tasks.repository.js';

/** How long a staged task's instance owns it without renewing (renewed every third of it). */
export const TASK_LEASE_MS = 30_000;

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
      renewTaskLease(db, taskId, now() + leaseMs).catch((error: unknown) =>
        logger?.warn({ err: error, task_id: taskId }, 'could not renew the task lease'),
      );
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
  const lapsed = await findLapsedTaskLeases(ctx.db, ctx.clock.now(), limit);
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
        // The key was held `in progress` by the running task: released so the retry runs at once.
        await releaseTaskKey(ctx.db, record.id);
        reaped += 1;
        ctx.logger?.warn({ task_id: record.id }, 'failed an A2A task whose instance was lost');
      }
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
