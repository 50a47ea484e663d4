import type { WarnLog } from '../../logger.js';
import type { Db } from '../../db/database.js';
import type { WriteCommitter } from '../../db/group-commit.js';
import { isExpectedFallback, tryOneStatement } from '../../db/one-statement.js';
import { sharedStatements } from '../../db/shared-statements.js';
import type { Artifact } from '../model.js';
import type { SkillWrite } from '../skills/skill.js';
import { insertTaskWithWrite, type TaskWrite } from './task-with-write.repository.js';
import { insertTasksWithWrites } from './tasks-with-writes.repository.js';

/**
 * A completed task stored by its skill's write's own statement (task-runner.ts, PostgreSQL): the
 * task's artifacts, or `undefined` with nothing written (the write returned no row, or the statement
 * failed), when the caller runs its transaction, which reaches the same outcome.
 */
export type TaskWrites = (item: TaskWrite) => Promise<Artifact[] | undefined>;

const unexpectedAlone = (log: WarnLog, item: TaskWrite) => (error: unknown) =>
  log.warn({ err: error, task_id: item.task.id }, 'one-statement task write failed; ran the transaction');

/** One statement per task. */
export const separateTaskWrites =
  (writes: WriteCommitter, log: WarnLog): TaskWrites =>
  (item) =>
    tryOneStatement(writes, (db) => insertTaskWithWrite(db, item), unexpectedAlone(log, item));

/** Tasks of one statement at most, as for create-user's REST upserts (src/users/user-upserts.ts). */
const MAX_ITEMS = 64;

const taskKeyOf = (item: TaskWrite): string[] =>
  item.key ? [`a2a task key\n${item.task.projectId}\n${item.key.key}`] : [];

/**
 * Tasks sharing statements under load (src/db/shared-statements.ts), one queue per skill write, as
 * create-user's REST upserts do: a statement that fails has each of its tasks run alone, and a task
 * whose own statement fails goes to its transaction. A skill whose write has no form for many calls
 * (`SkillWrite.many`) writes each task alone.
 */
export function sharedTaskWrites(db: Db, writes: WriteCommitter, maxInFlight: number, log: WarnLog): TaskWrites {
  const separate = separateTaskWrites(writes, log);
  const queues = new Map<SkillWrite['build'], (item: TaskWrite) => Promise<Artifact[] | undefined>>();
  const queueOf = (build: SkillWrite['build']) => {
    let queue = queues.get(build);
    if (!queue)
      queues.set(
        build,
        (queue = sharedStatements<TaskWrite, Artifact[] | undefined>({
          maxInFlight,
          maxItems: MAX_ITEMS,
          keysOf: (item) => [...item.write.keys, ...taskKeyOf(item)],
          alone: (item) => insertTaskWithWrite(db, item),
          together: (items) => insertTasksWithWrites(db, items),
          isExpected: isExpectedFallback,
          unexpected: (error) => log.warn({ err: error }, 'shared task write failed; ran each alone'),
        })),
      );
    return queue;
  };
  return async (item) => {
    if (!item.write.many) return separate(item);
    try {
      return await queueOf(item.write.build)(item);
    } catch (error) {
      if (!isExpectedFallback(error)) unexpectedAlone(log, item)(error);
      return undefined;
    }
  };
}
