import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { readJson, writeJson } from '../../db/json.js';
import { preparedCommand, preparedQuery } from '../../db/prepared.js';
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
  /** JSON: every status so far, oldest first (seq = index + 1). */
  status_history: unknown;
  /** JSON: the task's messages, oldest first. */
  messages: unknown;
  /** JSON: the task's artifacts. */
  artifacts: unknown;
  created_at: number;
  /** Rule `a2a-idempotency`: the SendMessage key that started the task (`h:` header, `m:` messageId), unique per project; null once released. */
  idempotency_key: string | null;
  /** The hash of that request, telling a replay from a reuse of the key. */
  request_hash: string | null;
}

declare module '../../db/database.js' {
  interface Database {
    a2a_tasks: A2aTasksTable;
  }
}

/** A stored task. `seq` numbers its status changes; the current status is `statusHistory[seq - 1]`. */
export interface TaskRecord {
  id: string;
  projectId: string;
  contextId: string;
  seq: number;
  status: TaskStatus;
  statusHistory: TaskStatus[];
  history: Message[];
  artifacts: Artifact[];
}

const COLUMNS = [
  'id',
  'project_id',
  'context_id',
  'state',
  'status_seq',
  'status_message',
  'status_timestamp',
  'status_history',
  'messages',
  'artifacts',
] as const;
type Row = Pick<A2aTasksTable, (typeof COLUMNS)[number]>;

const toRecord = (r: Row): TaskRecord => ({
  id: r.id,
  projectId: r.project_id,
  contextId: r.context_id,
  seq: Number(r.status_seq),
  status: {
    state: r.state,
    timestamp: Number(r.status_timestamp),
    ...(r.status_message ? { message: readJson<Message>(r.status_message) } : {}),
  },
  statusHistory: readJson<TaskStatus[]>(r.status_history),
  history: readJson<Message[]>(r.messages),
  artifacts: readJson<Artifact[]>(r.artifacts),
});

const jsonOrNull = (value: unknown): string | null => (value === undefined ? null : writeJson(value));

// Compiled once (see db/prepared.ts): on SQLite, compiling costs more than running them.
type Insert = {
  id: string;
  projectId: string;
  contextId: string;
  skill: string;
  state: TaskState;
  seq: number;
  message: string | null;
  timestamp: number;
  statuses: string;
  messages: string;
  artifacts: string;
  createdAt: number;
  key: string | null;
  hash: string | null;
};
// No RETURNING: the count of rows inserted says whether the key was claimed, and SQLite runs the
// statement without building a result row.
const insertRow = preparedCommand(
  [
    'id',
    'projectId',
    'contextId',
    'skill',
    'state',
    'seq',
    'message',
    'timestamp',
    'statuses',
    'messages',
    'artifacts',
    'createdAt',
    'key',
    'hash',
  ],
  (db: Db, p: Insert) =>
    db
      .insertInto('a2a_tasks')
      .values({
        id: p.id,
        project_id: p.projectId,
        context_id: p.contextId,
        skill: p.skill,
        state: p.state,
        status_seq: p.seq,
        status_message: p.message,
        status_timestamp: p.timestamp,
        status_history: p.statuses,
        messages: p.messages,
        artifacts: p.artifacts,
        created_at: p.createdAt,
        idempotency_key: p.key,
        request_hash: p.hash,
      })
      .onConflict((oc) => oc.columns(['project_id', 'idempotency_key']).doNothing()),
);

type Update = {
  id: string;
  expectedSeq: number;
  seq: number;
  state: TaskState;
  message: string | null;
  timestamp: number;
  statuses: string;
  artifacts: string;
};
const updateRow = preparedQuery(
  ['id', 'expectedSeq', 'seq', 'state', 'message', 'timestamp', 'statuses', 'artifacts'],
  (db: Db, p: Update) =>
    db
      .updateTable('a2a_tasks')
      .set({
        state: p.state,
        status_seq: p.seq,
        status_message: p.message,
        status_timestamp: p.timestamp,
        status_history: p.statuses,
        artifacts: p.artifacts,
      })
      .where('id', '=', p.id)
      .where('status_seq', '=', p.expectedSeq)
      .where('state', 'not in', TERMINAL_STATES)
      .returning('id'),
);

const selectRow = preparedQuery(['id', 'projectId'], (db: Db, p: { id: string; projectId: string }) =>
  db.selectFrom('a2a_tasks').select(COLUMNS).where('id', '=', p.id).where('project_id', '=', p.projectId),
);

/** A SendMessage key on its task (rule `a2a-idempotency`): `key` is scope-prefixed, `hash` the request's. */
export interface TaskKey {
  key: string;
  hash: string;
}

/**
 * A new task with its statuses so far (the last one current), messages and artifacts: one row.
 * With a key, the insert is also the key's claim: `false` (nothing written) when a task of the
 * project holds it already.
 */
export async function insertTask(
  db: Db,
  task: { id: string; projectId: string; contextId: string; skill: string; createdAt: number },
  statuses: TaskStatus[],
  messages: Message[],
  artifacts: Artifact[],
  key?: TaskKey,
): Promise<boolean> {
  const last = statuses[statuses.length - 1]!;
  const inserted = await insertRow(db, {
    ...task,
    key: key?.key ?? null,
    hash: key?.hash ?? null,
    state: last.state,
    seq: statuses.length,
    message: jsonOrNull(last.message),
    timestamp: last.timestamp,
    statuses: writeJson(statuses),
    messages: writeJson(messages),
    artifacts: writeJson(artifacts),
  });
  return inserted > 0;
}

const selectByKey = preparedQuery(['projectId', 'key'], (db: Db, p: { projectId: string; key: string }) =>
  db
    .selectFrom('a2a_tasks')
    .select(['id', 'state', 'created_at', 'request_hash'])
    .where('project_id', '=', p.projectId)
    .where('idempotency_key', '=', p.key),
);

/** The task holding a SendMessage key in the project, if any. */
export async function findTaskByKey(
  db: Db,
  projectId: string,
  key: string,
): Promise<{ id: string; state: TaskState; createdAt: number; hash: string | null } | undefined> {
  const [row] = await selectByKey(db, { projectId, key });
  return row && { id: row.id, state: row.state, createdAt: Number(row.created_at), hash: row.request_hash };
}

/** Releases the key from its task (expired, abandoned or lost), only if that task still holds it. */
export async function releaseTaskKey(db: Db, taskId: string, key?: string): Promise<void> {
  let query = db.updateTable('a2a_tasks').set({ idempotency_key: null, request_hash: null }).where('id', '=', taskId);
  if (key !== undefined) query = query.where('idempotency_key', '=', key);
  await query.execute();
}

/**
 * Appends `status` (and `artifacts`) to a task that is still at `record.seq` and not terminal.
 * `false` when someone else changed it first (optimistic concurrency on the seq).
 */
export async function appendStatus(
  db: Db,
  record: Pick<TaskRecord, 'id' | 'seq' | 'statusHistory' | 'artifacts'>,
  status: TaskStatus,
  artifacts: Artifact[],
): Promise<boolean> {
  const rows = await updateRow(db, {
    id: record.id,
    expectedSeq: record.seq,
    seq: record.seq + 1,
    state: status.state,
    message: jsonOrNull(status.message),
    timestamp: status.timestamp,
    statuses: writeJson([...record.statusHistory, status]),
    artifacts: writeJson([...record.artifacts, ...artifacts]),
  });
  return rows.length > 0;
}

/** Only within the project: another project's task is indistinguishable from an absent one. */
export async function findTask(db: Db, projectId: string, taskId: string): Promise<TaskRecord | undefined> {
  const [row] = await selectRow(db, { id: taskId, projectId });
  return row && toRecord(row);
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

/** Newest status first, ties by id (rule `a2a-list-tasks`); `after` is the last task of the previous page. */
export async function listTasks(
  db: Db,
  f: TaskFilter,
  after: { timestamp: number; id: string } | undefined,
  limit: number,
): Promise<TaskRecord[]> {
  let q = filtered(db, f).select(COLUMNS);
  if (after)
    q = q.where((eb) =>
      eb.or([
        eb('status_timestamp', '<', after.timestamp),
        eb.and([eb('status_timestamp', '=', after.timestamp), eb('id', '<', after.id)]),
      ]),
    );
  const rows = await q.orderBy('status_timestamp', 'desc').orderBy('id', 'desc').limit(limit).execute();
  return rows.map(toRecord);
}

export async function countTasks(db: Db, f: TaskFilter): Promise<number> {
  const { count } = await filtered(db, f)
    .select(sql<number>`count(*)`.as('count'))
    .executeTakeFirstOrThrow();
  return Number(count);
}
