import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import { rpcError } from '../errors.js';
import { isTerminal, type Artifact, type ListTasksInput, type ListTasksResult, type StatusEvent, type Task, type TaskStatus } from '../model.js';
import { enqueueWebhooks, listTaskConfigs, storePushConfig, type StoredPushConfig } from '../push-configs/push-configs.service.js';
import { invalidParams } from '../versions/codec.js';
import type { TaskEventBus } from './task-events.js';
import * as repo from './tasks.repository.js';

/** The task store and its state machine (spec "States and transitions"); always scoped to one project. */
export interface StoreContext {
  db: Db;
  clock: Clock;
  events: TaskEventBus;
  projectId: string;
}

export interface TaskView {
  /** Unset: the whole history; 0: none; n: the n most recent messages. */
  historyLength?: number;
  includeArtifacts?: boolean;
}

const notFound = (id: string) => rpcError('TASK_NOT_FOUND', `Task ${id} not found`, { metadata: { taskId: id } });

async function assemble(db: Db, rows: repo.TaskRow[], view: TaskView): Promise<Task[]> {
  const ids = rows.map((r) => r.id);
  const [messages, artifacts] = await Promise.all([
    view.historyLength === 0 ? new Map<string, never[]>() : repo.loadMessages(db, ids),
    view.includeArtifacts === false ? new Map<string, never[]>() : repo.loadArtifacts(db, ids),
  ]);
  return rows.map((r) => {
    const history = messages.get(r.id) ?? [];
    return {
      id: r.id,
      contextId: r.contextId,
      status: r.status,
      artifacts: artifacts.get(r.id) ?? [],
      history: view.historyLength === undefined ? history : history.slice(Math.max(0, history.length - view.historyLength)),
    };
  });
}

export async function getTask(ctx: StoreContext, id: string, view: TaskView = {}): Promise<Task> {
  const row = await repo.findTask(ctx.db, ctx.projectId, id);
  if (!row) throw notFound(id);
  return (await assemble(ctx.db, [row], view))[0]!;
}

/** The task's current status as a stream event (SubscribeToTask's snapshot). */
export async function currentStatus(ctx: StoreContext, id: string): Promise<StatusEvent> {
  const row = await repo.findTask(ctx.db, ctx.projectId, id);
  if (!row) throw notFound(id);
  return { taskId: row.id, contextId: row.contextId, seq: row.seq, status: row.status };
}

const encodeCursor = (r: repo.TaskRow): string => Buffer.from(JSON.stringify([r.status.timestamp, r.id])).toString('base64url');

function decodeCursor(token: string): { timestamp: number; id: string } {
  try {
    const [timestamp, id] = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown[];
    if (typeof timestamp === 'number' && typeof id === 'string') return { timestamp, id };
  } catch {
    // fall through
  }
  throw invalidParams([{ field: 'params.pageToken', description: 'not a page token of this listing' }]);
}

/** A7: newest status first, ties by id; `totalSize` on the first page only, `nextPageToken` "" on the last. */
export async function listTasks(ctx: StoreContext, input: ListTasksInput): Promise<ListTasksResult> {
  const filter = { projectId: ctx.projectId, ...input };
  const after = input.pageToken === undefined ? undefined : decodeCursor(input.pageToken);
  const rows = await repo.listTasks(ctx.db, filter, after, input.pageSize + 1);
  const page = rows.slice(0, input.pageSize);
  const [tasks, totalSize] = await Promise.all([
    assemble(ctx.db, page, { ...(input.historyLength !== undefined ? { historyLength: input.historyLength } : {}), includeArtifacts: input.includeArtifacts }),
    after ? 0 : repo.countTasks(ctx.db, filter),
  ]);
  return { tasks, nextPageToken: rows.length > input.pageSize ? encodeCursor(page[page.length - 1]!) : '', pageSize: input.pageSize, totalSize };
}

/**
 * Records a new task already `working`, with `submitted` before it in its history (seq 1 and 2),
 * its user message and an inline push config, whose first two webhooks are queued with it.
 */
export async function startTask(ctx: StoreContext, task: Task, skill: string, submittedAt: number, pushConfig?: StoredPushConfig): Promise<StatusEvent[]> {
  const statuses: TaskStatus[] = [{ state: 'submitted', timestamp: submittedAt }, task.status];
  const events = statuses.map((status, i) => ({ taskId: task.id, contextId: task.contextId, seq: i + 1, status }));
  await ctx.db.transaction().execute(async (trx) => {
    await repo.insertTask(trx, { id: task.id, projectId: ctx.projectId, contextId: task.contextId, skill, createdAt: submittedAt }, statuses, task.history, []);
    if (!pushConfig) return;
    await storePushConfig(trx, pushConfig, submittedAt);
    for (const event of events) await enqueueWebhooks(trx, ctx.clock, [pushConfig], event, { ...task, status: event.status });
  });
  await ctx.events.publish(events);
  return events;
}

/**
 * Moves a task that is not terminal to `status` (with `artifacts` added) and queues its webhooks.
 * When the task became terminal meanwhile (canceled), nothing changes and that state is returned.
 */
export async function advanceTask(ctx: StoreContext, task: Task, status: TaskStatus, artifacts: Artifact[] = []): Promise<{ task: Task; event: StatusEvent; changed: boolean }> {
  const next: Task = { ...task, status, artifacts: [...task.artifacts, ...artifacts] };
  const seq = await ctx.db.transaction().execute(async (trx) => {
    const advanced = await repo.advanceStatus(trx, task.id, status);
    if (advanced === undefined) return undefined;
    await repo.insertArtifacts(trx, task.id, artifacts);
    const configs = await listTaskConfigs(trx, ctx.projectId, task.id);
    await enqueueWebhooks(trx, ctx.clock, configs, { taskId: task.id, contextId: task.contextId, seq: advanced, status }, next);
    return advanced;
  });
  if (seq === undefined) {
    const current = await getTask(ctx, task.id);
    const row = await currentStatus(ctx, task.id);
    return { task: current, event: row, changed: false };
  }
  const event = { taskId: task.id, contextId: task.contextId, seq, status };
  await ctx.events.publish([event]);
  return { task: next, event, changed: true };
}

/** CancelTask: a task not terminal becomes `canceled`; a terminal one is -32002. */
export async function cancelTask(ctx: StoreContext, id: string): Promise<Task> {
  const task = await getTask(ctx, id);
  const refuse = (state: string) => rpcError('TASK_NOT_CANCELABLE', `Task ${id} is already ${state}`, { metadata: { taskId: id, state } });
  if (isTerminal(task.status.state)) throw refuse(task.status.state);
  const { task: after, changed } = await advanceTask(ctx, task, { state: 'canceled', timestamp: ctx.clock.now() });
  if (!changed) throw refuse(after.status.state);
  return after;
}
