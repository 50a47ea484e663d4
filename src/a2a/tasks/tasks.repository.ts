import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { readJson, writeJson } from '../../db/json.js';
import { TERMINAL_STATES, type Artifact, type Message, type TaskState, type TaskStatus } from '../model.js';

export interface A2aTasksTable {
  id: string;
  project_id: string;
  context_id: string;
  skill: string;
  state: TaskState;
  status_seq: number;
  status_message: unknown;
  status_timestamp: number;
  created_at: number;
}
export interface A2aTaskStatusHistoryTable {
  task_id: string;
  seq: number;
  state: TaskState;
  message: unknown;
  timestamp: number;
}
export interface A2aTaskMessagesTable {
  task_id: string;
  seq: number;
  message: unknown;
}
export interface A2aTaskArtifactsTable {
  task_id: string;
  seq: number;
  artifact: unknown;
}

declare module '../../db/database.js' {
  interface Database {
    a2a_tasks: A2aTasksTable;
    a2a_task_status_history: A2aTaskStatusHistoryTable;
    a2a_task_messages: A2aTaskMessagesTable;
    a2a_task_artifacts: A2aTaskArtifactsTable;
  }
}

export interface TaskRow {
  id: string;
  projectId: string;
  contextId: string;
  seq: number;
  status: TaskStatus;
}

const toRow = (r: Pick<A2aTasksTable, 'id' | 'project_id' | 'context_id' | 'state' | 'status_seq' | 'status_message' | 'status_timestamp'>): TaskRow => ({
  id: r.id,
  projectId: r.project_id,
  contextId: r.context_id,
  seq: Number(r.status_seq),
  status: { state: r.state, timestamp: Number(r.status_timestamp), ...(r.status_message ? { message: readJson<Message>(r.status_message) } : {}) },
});

const jsonOrNull = (value: unknown): string | null => (value === undefined ? null : writeJson(value));

/** A new task with its first status changes (seq 1..n), its messages and artifacts, in one go. */
export async function insertTask(
  db: Db,
  task: { id: string; projectId: string; contextId: string; skill: string; createdAt: number },
  statuses: TaskStatus[],
  messages: Message[],
  artifacts: Artifact[],
): Promise<void> {
  const last = statuses[statuses.length - 1]!;
  await db
    .insertInto('a2a_tasks')
    .values({
      id: task.id,
      project_id: task.projectId,
      context_id: task.contextId,
      skill: task.skill,
      state: last.state,
      status_seq: statuses.length,
      status_message: jsonOrNull(last.message),
      status_timestamp: last.timestamp,
      created_at: task.createdAt,
    })
    .execute();
  await db
    .insertInto('a2a_task_status_history')
    .values(statuses.map((s, i) => ({ task_id: task.id, seq: i + 1, state: s.state, message: jsonOrNull(s.message), timestamp: s.timestamp })))
    .execute();
  if (messages.length > 0) await db.insertInto('a2a_task_messages').values(messages.map((m, i) => ({ task_id: task.id, seq: i + 1, message: writeJson(m) }))).execute();
  await insertArtifacts(db, task.id, artifacts);
}

export async function insertArtifacts(db: Db, taskId: string, artifacts: Artifact[]): Promise<void> {
  if (artifacts.length === 0) return;
  const { max } = await db.selectFrom('a2a_task_artifacts').select((eb) => eb.fn.max('seq').as('max')).where('task_id', '=', taskId).executeTakeFirstOrThrow();
  const start = Number(max ?? 0);
  await db.insertInto('a2a_task_artifacts').values(artifacts.map((a, i) => ({ task_id: taskId, seq: start + i + 1, artifact: writeJson(a) }))).execute();
}

/**
 * Moves a task that is not terminal to `status` and records it in the history, as one change;
 * returns its seq, or `undefined` when the task is already terminal (someone else finished it).
 */
export async function advanceStatus(db: Db, taskId: string, status: TaskStatus): Promise<number | undefined> {
  const updated = await db
    .updateTable('a2a_tasks')
    .set({ state: status.state, status_seq: sql`status_seq + 1`, status_message: jsonOrNull(status.message), status_timestamp: status.timestamp })
    .where('id', '=', taskId)
    .where('state', 'not in', TERMINAL_STATES)
    .returning('status_seq')
    .executeTakeFirst();
  if (!updated) return undefined;
  const seq = Number(updated.status_seq);
  await db.insertInto('a2a_task_status_history').values({ task_id: taskId, seq, state: status.state, message: jsonOrNull(status.message), timestamp: status.timestamp }).execute();
  return seq;
}

const TASK_COLUMNS = ['id', 'project_id', 'context_id', 'state', 'status_seq', 'status_message', 'status_timestamp'] as const;

/** Only within the project: another project's task is indistinguishable from an absent one. */
export async function findTask(db: Db, projectId: string, taskId: string): Promise<TaskRow | undefined> {
  const row = await db.selectFrom('a2a_tasks').select(TASK_COLUMNS).where('id', '=', taskId).where('project_id', '=', projectId).executeTakeFirst();
  return row && toRow(row);
}

export interface TaskFilter {
  projectId: string;
  contextId?: string;
  state?: TaskState;
  statusTimestampAfter?: number;
}

function filtered(db: Db, f: TaskFilter) {
  let q = db.selectFrom('a2a_tasks').where('project_id', '=', f.projectId);
  if (f.contextId !== undefined) q = q.where('context_id', '=', f.contextId);
  if (f.state !== undefined) q = q.where('state', '=', f.state);
  if (f.statusTimestampAfter !== undefined) q = q.where('status_timestamp', '>=', f.statusTimestampAfter);
  return q;
}

/** Newest status first, ties by id (A7); `after` is the last row of the previous page. */
export async function listTasks(db: Db, f: TaskFilter, after: { timestamp: number; id: string } | undefined, limit: number): Promise<TaskRow[]> {
  let q = filtered(db, f).select(TASK_COLUMNS);
  if (after) q = q.where((eb) => eb.or([eb('status_timestamp', '<', after.timestamp), eb.and([eb('status_timestamp', '=', after.timestamp), eb('id', '<', after.id)])]));
  const rows = await q.orderBy('status_timestamp', 'desc').orderBy('id', 'desc').limit(limit).execute();
  return rows.map(toRow);
}

export async function countTasks(db: Db, f: TaskFilter): Promise<number> {
  const { count } = await filtered(db, f).select((eb) => eb.fn.countAll().as('count')).executeTakeFirstOrThrow();
  return Number(count);
}

export async function loadMessages(db: Db, taskIds: string[]): Promise<Map<string, Message[]>> {
  const out = new Map<string, Message[]>(taskIds.map((id) => [id, []]));
  if (taskIds.length === 0) return out;
  const rows = await db.selectFrom('a2a_task_messages').select(['task_id', 'message']).where('task_id', 'in', taskIds).orderBy('task_id').orderBy('seq').execute();
  for (const r of rows) out.get(r.task_id)?.push(readJson<Message>(r.message));
  return out;
}

export async function loadArtifacts(db: Db, taskIds: string[]): Promise<Map<string, Artifact[]>> {
  const out = new Map<string, Artifact[]>(taskIds.map((id) => [id, []]));
  if (taskIds.length === 0) return out;
  const rows = await db.selectFrom('a2a_task_artifacts').select(['task_id', 'artifact']).where('task_id', 'in', taskIds).orderBy('task_id').orderBy('seq').execute();
  for (const r of rows) out.get(r.task_id)?.push(readJson<Artifact>(r.artifact));
  return out;
}

export async function findStatusAt(db: Db, taskId: string, seq: number): Promise<TaskStatus | undefined> {
  const r = await db.selectFrom('a2a_task_status_history').select(['state', 'message', 'timestamp']).where('task_id', '=', taskId).where('seq', '=', seq).executeTakeFirst();
  return r && { state: r.state, timestamp: Number(r.timestamp), ...(r.message ? { message: readJson<Message>(r.message) } : {}) };
}
