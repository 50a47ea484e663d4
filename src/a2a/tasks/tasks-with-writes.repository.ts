import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { readJson } from '../../db/json.js';
import { preparedQuery } from '../../db/prepared.js';
import type { Artifact } from '../model.js';
import type { SkillWrite } from '../skills/skill.js';
import {
  TASK_SLOTS,
  taskInsertFrom,
  taskWriteParams,
  WRITE_PREFIX,
  type TaskWrite,
} from './task-with-write.repository.js';

type Row = { id: string; artifacts: string };
type Statement = (db: Db, params: Record<string, unknown>) => Promise<Row[]>;

/**
 * `insertTaskWithWrite` for several tasks of one skill (one `build`) in one statement, each task and
 * its write a pair of CTEs (`result_i AS (write), task_i AS (INSERT INTO a2a_tasks ... FROM result_i)`),
 * so each task stores the row its own write returned. The writes must touch distinct rows (their
 * `keys`), and the tasks hold distinct idempotency keys: one statement cannot update a row twice, and a
 * held key fails the whole statement, writing nothing. Resolves, in the items' order, with each task's
 * artifacts, or `undefined` for an item whose write returned no row (nothing of it written).
 * PostgreSQL only, as `insertTaskWithWrite`.
 */
export async function insertTasksWithWrites(db: Db, items: TaskWrite[]): Promise<Array<Artifact[] | undefined>> {
  // Statements in flight at once that share rows take them in one order (a deadlock would otherwise
  // cost both a retry, each item alone).
  const ordered = [...items].sort((a, b) => compareKeys(a.write.keys, b.write.keys));
  const params: Record<string, unknown> = {};
  ordered.forEach((item, i) => {
    for (const [name, value] of Object.entries(taskWriteParams(item))) params[`${i}.${name}`] = value;
  });
  const rows = await statementOf(items[0]!.write, items.length)(db, params);
  const byTask = new Map(rows.map((row) => [row.id, readJson<Artifact[]>(row.artifacts)]));
  return items.map((item) => byTask.get(item.task.id));
}

const compareKeys = (a: readonly string[], b: readonly string[]): number => {
  const x = a.join('\n');
  const y = b.join('\n');
  return x < y ? -1 : x > y ? 1 : 0;
};

/** Compiled once per skill's `build` and item count (src/db/prepared.ts); callers use a few counts (powers of two). */
const statements = new WeakMap<SkillWrite['build'], Map<number, Statement>>();

function statementOf(write: SkillWrite, count: number): Statement {
  let byCount = statements.get(write.build);
  if (!byCount) statements.set(write.build, (byCount = new Map<number, Statement>()));
  let statement = byCount.get(count);
  if (!statement) {
    const writeNames = Object.keys(write.params).map((name) => WRITE_PREFIX + name);
    const names = Array.from({ length: count }, (_, i) =>
      [...TASK_SLOTS, ...writeNames].map((name) => `${i}.${name}`),
    ).flat();
    const build = write.build;
    statement = preparedQuery<Record<string, unknown>, Row>(names, (kysely, p) => {
      const db = kysely as Db;
      const pairs = Array.from({ length: count }, (_, i) => {
        const slot = (name: string) => p[`${i}.${name}`];
        const task = Object.fromEntries(TASK_SLOTS.map((name) => [name, slot(name)])) as Record<
          (typeof TASK_SLOTS)[number],
          unknown
        >;
        const written = build(
          db,
          Object.fromEntries(Object.keys(write.params).map((name) => [name, slot(WRITE_PREFIX + name)])),
        );
        const insert = taskInsertFrom(db, task, `result_${i}`).returning(['id', 'artifacts']);
        return sql`${sql.table(`result_${i}`)} as (${written}), ${sql.table(`task_${i}`)} as (${insert})`;
      });
      const selects = Array.from({ length: count }, (_, i) => sql`select id, artifacts from ${sql.table(`task_${i}`)}`);
      const query = sql<Row>`with ${sql.join(pairs)} ${sql.join(selects, sql` union all `)}`;
      return { compile: () => query.compile(db) };
    });
    byCount.set(count, statement);
  }
  return statement;
}
