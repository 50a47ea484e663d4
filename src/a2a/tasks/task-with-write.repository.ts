import { sql, type OperationNodeSource } from 'kysely';
import type { Db } from '../../db/database.js';
import { sqlDialect } from '../../db/dialect.js';
import { readJson, writeJson } from '../../db/json.js';
import type { Artifact, Message, TaskStatus } from '../model.js';
import type { TaskKey } from './tasks.repository.js';
import type { SkillWrite } from '../skills/skill.js';
import { preparedQuery } from '../../db/prepared.js';

/**
 * `insertTask` for a task whose outcome is the write `write` (an `INSERT ... RETURNING`), both in one
 * statement, compiled once per skill: `WITH result AS (write) INSERT INTO a2a_tasks ... SELECT ... FROM
 * result`. The task's one artifact holds the row the write returned, as a JSON object of its columns.
 * Resolves with the stored artifacts, or `undefined` when the write returned no row (then nothing was
 * written). A key another task of the project holds fails the whole statement with a unique
 * violation, so nothing is written: `insertTask`'s `ON CONFLICT DO NOTHING` would keep the write
 * without its task here.
 * PostgreSQL only (`supportsWritesInWith`): the casts and JSON functions are its own.
 */
export async function insertTaskWithWrite(db: Db, item: TaskWrite): Promise<Artifact[] | undefined> {
  if (!sqlDialect(db).supportsWritesInWith) throw new Error('insertTaskWithWrite needs writes in WITH');
  const [inserted] = await statementOf(item.write)(db, taskWriteParams(item));
  return inserted && readJson<Artifact[]>(inserted.artifacts);
}

/** A completed task and the skill write whose returned row is its one artifact. */
export interface TaskWrite {
  task: { id: string; projectId: string; contextId: string; skill: string; createdAt: number };
  statuses: TaskStatus[];
  messages: Message[];
  artifact: { artifactId: string; name: string };
  write: SkillWrite;
  key?: TaskKey | undefined;
}

/** The statement's values: the task's under `TASK_SLOTS`, the write's under `WRITE_PREFIX`. */
export function taskWriteParams({
  task,
  statuses,
  messages,
  artifact,
  write,
  key,
}: TaskWrite): Record<string, unknown> {
  const last = statuses[statuses.length - 1]!;
  const params: Record<string, unknown> = {
    id: task.id,
    projectId: task.projectId,
    contextId: task.contextId,
    skill: task.skill,
    state: last.state,
    statusSeq: statuses.length,
    statusMessage: last.message === undefined ? null : writeJson(last.message),
    statusTimestamp: last.timestamp,
    statusHistory: writeJson(statuses),
    messages: writeJson(messages),
    artifactId: artifact.artifactId,
    artifactName: artifact.name,
    createdAt: task.createdAt,
    key: key?.key ?? null,
    keyHash: key?.hash ?? null,
  };
  for (const [name, value] of Object.entries(write.params)) params[WRITE_PREFIX + name] = value;
  return params;
}

const TASK_SLOTS = [
  'id',
  'projectId',
  'contextId',
  'skill',
  'state',
  'statusSeq',
  'statusMessage',
  'statusTimestamp',
  'statusHistory',
  'messages',
  'artifactId',
  'artifactName',
  'createdAt',
  'key',
  'keyHash',
] as const;

/** The write's parameters among the task's, kept apart by this prefix. */
const WRITE_PREFIX = 'write.';

function taskInsert(db: Db, t: Record<(typeof TASK_SLOTS)[number], unknown>, write: OperationNodeSource) {
  // INSERT ... SELECT gives its values no column types to infer, hence a cast on each.
  const row = sql`select ${t.id}::text, ${t.projectId}::text, ${t.contextId}::text, ${t.skill}::text,
    ${t.state}::text, ${t.statusSeq}::integer, ${t.statusMessage}::jsonb, ${t.statusTimestamp}::bigint,
    ${t.statusHistory}::jsonb, ${t.messages}::jsonb,
    jsonb_build_array(jsonb_build_object('artifactId', ${t.artifactId}::text, 'name', ${t.artifactName}::text,
      'parts', jsonb_build_array(jsonb_build_object('data', to_jsonb(result))))),
    ${t.createdAt}::bigint, ${t.key}::text, ${t.keyHash}::text
    from result`;
  return db
    .with('result', () => write as never)
    .insertInto('a2a_tasks')
    .columns([
      'id',
      'project_id',
      'context_id',
      'skill',
      'state',
      'status_seq',
      'status_message',
      'status_timestamp',
      'status_history',
      'messages',
      'artifacts',
      'created_at',
      'idempotency_key',
      'request_hash',
    ])
    .expression(row)
    .returning('artifacts');
}

type TaskWithWrite = (db: Db, params: Record<string, unknown>) => Promise<{ artifacts: string }[]>;

/** The task insert around each skill's write, compiled once per skill's `build` (src/db/prepared.ts). */
const statements = new WeakMap<SkillWrite['build'], TaskWithWrite>();

function statementOf(write: SkillWrite): TaskWithWrite {
  let statement = statements.get(write.build);
  if (!statement) {
    const writeNames = Object.keys(write.params);
    const build = write.build;
    statement = preparedQuery<Record<string, unknown>, { artifacts: string }>(
      [...TASK_SLOTS, ...writeNames.map((name) => WRITE_PREFIX + name)],
      (db, p) =>
        taskInsert(
          db as Db,
          p,
          build(db as Db, Object.fromEntries(writeNames.map((name) => [name, p[WRITE_PREFIX + name]]))),
        ),
    );
    statements.set(write.build, statement);
  }
  return statement;
}
