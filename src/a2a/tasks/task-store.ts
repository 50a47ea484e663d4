import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import { rpcError } from '../errors.js';
import {
  isTerminal,
  type Artifact,
  type ListTasksInput,
  type ListTasksResult,
  type StatusUpdate,
  type Task,
  type TaskStatus,
} from '../model.js';
import {
  enqueueCallbacks,
  listTaskConfigs,
  storePushConfig,
  type StoredPushConfig,
} from '../push-configs/push-configs.service.js';
import { invalidParams } from '../versions/codec.js';
import type { StatusUpdateBus } from './status-updates.js';
import type { WriteCommitter } from '../../db/group-commit.js';
import * as repo from './tasks.repository.js';
import { insertTaskLease } from './task-leases.repository.js';

/** The task store and its state machine (rule `task-lifecycle`); always scoped to one project. */
export interface StoreContext {
  db: Db;
  /** Every task write goes through it (group commit on the embedded database). */
  writes: WriteCommitter;
  clock: Clock;
  updates: StatusUpdateBus;
  projectId: string;
}

export interface TaskView {
  /** Unset: the whole history; 0: none; n: the n most recent messages. */
  historyLength?: number;
  includeArtifacts?: boolean;
}

/** A task as its writer knows it: the task, and the status history its next change appends to. */
export interface LiveTask {
  task: Task;
  seq: number;
  statusHistory: TaskStatus[];
}

/** The task's SendMessage key is held by another task of the project: nothing was written (rule `a2a-idempotency`). */
export class TaskKeyHeld extends Error {
  constructor() {
    super('idempotency key held by another task');
  }
}

export type { TaskKey } from './tasks.repository.js';

/** The task of the project holding a SendMessage key, if any (rule `a2a-idempotency`). */
export const findKeyHolder = (ctx: Pick<StoreContext, 'db' | 'projectId'>, key: string) =>
  repo.findTaskByKey(ctx.db, ctx.projectId, key);

/** Releases `key` from the task, if it still holds it (expired, abandoned or lost). */
export const releaseKey = (ctx: Pick<StoreContext, 'db'>, taskId: string, key: string): Promise<void> =>
  repo.releaseTaskKey(ctx.db, taskId, key);

const notFound = (id: string) => rpcError('TASK_NOT_FOUND', `Task ${id} not found`, { metadata: { taskId: id } });

function toTask(r: repo.TaskRecord, view: TaskView = {}): Task {
  const n = view.historyLength;
  return {
    id: r.id,
    contextId: r.contextId,
    status: r.status,
    artifacts: view.includeArtifacts === false ? [] : r.artifacts,
    history: n === undefined ? r.history : n === 0 ? [] : r.history.slice(-n),
  };
}

const toLive = (r: repo.TaskRecord): LiveTask => ({ task: toTask(r), seq: r.seq, statusHistory: r.statusHistory });
const eventOf = (r: repo.TaskRecord): StatusUpdate => ({
  taskId: r.id,
  contextId: r.contextId,
  seq: r.seq,
  status: r.status,
});

async function find(ctx: StoreContext, id: string): Promise<repo.TaskRecord> {
  const record = await repo.findTask(ctx.db, ctx.projectId, id);
  if (!record) throw notFound(id);
  return record;
}

export async function getTask(ctx: StoreContext, id: string, view: TaskView = {}): Promise<Task> {
  return toTask(await find(ctx, id), view);
}

export async function taskExists(ctx: Pick<StoreContext, 'db' | 'projectId'>, id: string): Promise<boolean> {
  return (await repo.findTask(ctx.db, ctx.projectId, id)) !== undefined;
}

/** The task's current status as a status update, if the task exists yet (a stream's poll behind a pooler). */
export async function latestStatus(ctx: StoreContext, id: string): Promise<StatusUpdate | undefined> {
  const record = await repo.findTask(ctx.db, ctx.projectId, id);
  return record && eventOf(record);
}

/** The task's current status as a status update (SubscribeToTask's snapshot). */
export async function currentStatus(ctx: StoreContext, id: string): Promise<StatusUpdate> {
  return eventOf(await find(ctx, id));
}

const encodeCursor = (r: repo.TaskRecord): string =>
  Buffer.from(JSON.stringify([r.status.timestamp, r.id])).toString('base64url');

function decodeCursor(token: string): { timestamp: number; id: string } {
  try {
    const [timestamp, id] = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown[];
    if (typeof timestamp === 'number' && typeof id === 'string') return { timestamp, id };
  } catch {
    // not ours
  }
  throw invalidParams([{ field: 'params.pageToken', description: 'not a page token of this listing' }]);
}

/** Rule `a2a-list-tasks`: newest status first, ties by id; `totalSize` on the first page only, `nextPageToken` "" on the last. */
export async function listTasks(ctx: StoreContext, input: ListTasksInput): Promise<ListTasksResult> {
  const filter = { projectId: ctx.projectId, ...input };
  const after = input.pageToken === undefined ? undefined : decodeCursor(input.pageToken);
  const [rows, totalSize] = await Promise.all([
    repo.listTasks(ctx.db, filter, after, input.pageSize + 1),
    after ? 0 : repo.countTasks(ctx.db, filter),
  ]);
  const page = rows.slice(0, input.pageSize);
  const view = {
    ...(input.historyLength !== undefined ? { historyLength: input.historyLength } : {}),
    includeArtifacts: input.includeArtifacts,
  };
  return {
    tasks: page.map((r) => toTask(r, view)),
    nextPageToken: rows.length > input.pageSize ? encodeCursor(page[page.length - 1]!) : '',
    pageSize: input.pageSize,
    totalSize,
  };
}

/**
 * Writes a new task with its status changes so far (the last is current), its messages and
 * artifacts, and an inline push config with one queued callback per change. Pass a transaction;
 * publish the returned events once it committed. With a key, throws `TaskKeyHeld` (write nothing
 * more, roll back) when another task holds it.
 */
export async function recordTask(
  db: Db,
  ctx: StoreContext,
  task: Task,
  skill: string,
  statuses: TaskStatus[],
  pushConfig?: StoredPushConfig,
  key?: repo.TaskKey,
): Promise<StatusUpdate[]> {
  const createdAt = statuses[0]!.timestamp;
  const events = statuses.map((status, i) => ({ taskId: task.id, contextId: task.contextId, seq: i + 1, status }));
  const inserted = await repo.insertTask(
    db,
    { id: task.id, projectId: ctx.projectId, contextId: task.contextId, skill, createdAt },
    statuses,
    task.history,
    task.artifacts,
    key,
  );
  if (!inserted) throw new TaskKeyHeld();
  if (pushConfig) {
    await storePushConfig(db, pushConfig, createdAt);
    for (const event of events)
      await enqueueCallbacks(db, ctx.clock, [pushConfig], event, { ...task, status: event.status });
  }
  return events;
}

/** A new task stored `working`, with `submitted` before it in its history (seq 1 and 2). */
export async function startTask(
  ctx: StoreContext,
  task: Task,
  skill: string,
  submittedAt: number,
  pushConfig?: StoredPushConfig,
  leaseUntil?: number,
  key?: repo.TaskKey,
): Promise<{ live: LiveTask; events: StatusUpdate[] }> {
  const statusHistory: TaskStatus[] = [{ state: 'submitted', timestamp: submittedAt }, task.status];
  const events = await ctx.writes.run(async (trx) => {
    const recorded = await recordTask(trx, ctx, task, skill, statusHistory, pushConfig, key);
    // The lease commits with the `working` task: a task stored working always has one (task-leases.ts).
    if (leaseUntil !== undefined) await insertTaskLease(trx, task.id, ctx.projectId, leaseUntil);
    return recorded;
  });
  await ctx.updates.publish(events);
  return { live: { task, seq: 2, statusHistory }, events };
}

/**
 * Moves a task that is not terminal to `status` (adding `artifacts`) and queues its callbacks. When
 * someone changed the task first (a cancel), nothing is written and its current state is returned.
 */
export async function advanceTask(
  ctx: StoreContext,
  live: LiveTask,
  status: TaskStatus,
  artifacts: Artifact[] = [],
): Promise<{ task: Task; event: StatusUpdate; changed: boolean }> {
  const task: Task = { ...live.task, status, artifacts: [...live.task.artifacts, ...artifacts] };
  const event: StatusUpdate = { taskId: task.id, contextId: task.contextId, seq: live.seq + 1, status };
  const changed = await ctx.writes.run(async (trx) => {
    if (
      !(await repo.appendStatus(
        trx,
        { id: task.id, seq: live.seq, statusHistory: live.statusHistory, artifacts: live.task.artifacts },
        status,
        artifacts,
      ))
    )
      return false;
    await enqueueCallbacks(trx, ctx.clock, await listTaskConfigs(trx, ctx.projectId, task.id), event, task);
    return true;
  });
  if (!changed) {
    const current = await find(ctx, task.id);
    return { task: toTask(current), event: eventOf(current), changed: false };
  }
  await ctx.updates.publish([event]);
  return { task, event, changed: true };
}

/** CancelTask: a task not terminal becomes `canceled`; a terminal one is -32002. */
export async function cancelTask(ctx: StoreContext, id: string): Promise<Task> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const record = await find(ctx, id);
    if (isTerminal(record.status.state))
      throw rpcError('TASK_NOT_CANCELABLE', `Task ${id} is already ${record.status.state}`, {
        metadata: { taskId: id, state: record.status.state },
      });
    const result = await advanceTask(ctx, toLive(record), { state: 'canceled', timestamp: ctx.clock.now() });
    if (result.changed) return result.task;
  }
  throw rpcError('INTERNAL_ERROR', `Task ${id} keeps changing; retry the cancel`);
}
