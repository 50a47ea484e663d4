import { describe, expect, it } from 'vitest';
import type { AnySkill, SkillDeps, SkillResult } from '../../src/a2a/skills/skill.js';
import type { StatusUpdateBus } from '../../src/a2a/tasks/status-updates.js';
import { runTask, type RunContext } from '../../src/a2a/tasks/task-runner.js';
import type { TaskWrite } from '../../src/a2a/tasks/task-with-write.repository.js';
import { AppError } from '../../src/errors.js';
import { sharedTaskWrites } from '../../src/a2a/tasks/task-writes.js';
import type { Db } from '../../src/db/database.js';
import { writeCommitterFor } from '../../src/db/group-commit.js';
import { systemClock } from '../../src/lib/clock.js';
import { newId, newTimeOrderedId } from '../../src/lib/ids.js';
import { upsertUserStatement } from '../../src/users/users.service.js';
import { countingStatements, failingStatements } from '../helpers/statements.js';
import { usePostgresProject } from '../helpers/postgres-project.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import { rpc, uid, v1Message, type Json } from './a2a-helpers.js';

/*
 * create-user tasks, each stored with its user's write by one statement, share statements under load
 * on PostgreSQL (src/a2a/tasks/task-writes.ts): each task keeps its own write's row, and whatever a
 * shared statement cannot settle gets the outcome it would have had alone.
 */

describe.runIf(TEST_DIALECTS.includes('postgres'))('shared task writes on postgres', () => {
  let database: TestDatabase;
  let projectId: string;
  const { warnings, log } = usePostgresProject('shared-tasks', (db, id) => {
    database = db;
    projectId = id;
  });

  const item = (projectUserId: string, properties: Record<string, unknown>, key?: string): TaskWrite => {
    const now = Date.now();
    return {
      task: { id: newTimeOrderedId(), projectId, contextId: newTimeOrderedId(), skill: 'create-user', createdAt: now },
      statuses: [
        { state: 'submitted', timestamp: now },
        { state: 'working', timestamp: now },
        { state: 'completed', timestamp: now },
      ],
      messages: [],
      artifact: { artifactId: newId(), name: 'user-result' },
      write: {
        artifactName: 'user-result',
        ...upsertUserStatement(systemClock, projectId, projectUserId, properties as never),
      },
      ...(key ? { key: { key, hash: `hash-${key}` } } : {}),
    };
  };
  const dataOf = (artifacts: Json) => artifacts?.[0]?.parts?.[0]?.data;
  const storedTask = (id: string) =>
    database.db.selectFrom('a2a_tasks').select(['state', 'artifacts']).where('id', '=', id).executeTakeFirst();
  const storedUser = (projectUserId: string) =>
    database.db
      .selectFrom('users')
      .select(['id', 'properties'])
      .where('project_id', '=', projectId)
      .where('project_user_id', '=', projectUserId)
      .executeTakeFirst();

  it('tasks that arrive while the limit is reached share one statement, each with its own user', async () => {
    const { db, statements } = countingStatements(database.db);
    const writes = sharedTaskWrites(db, writeCommitterFor(db, 'postgres'), 1, log);
    const items = Array.from({ length: 9 }, (_, i) => item(uid(`st-${i}`), { n: i }));
    const results = await Promise.all(items.map(writes));
    // The first alone; the eight that waited in one statement.
    expect(statements).toEqual([1, 8]);
    for (const [i, artifacts] of results.entries()) {
      const { projectUserId } = items[i]!.write.params as { projectUserId: string };
      const user = await storedUser(projectUserId);
      expect(dataOf(artifacts)).toEqual({ userId: user!.id, projectUserId, properties: { n: i } });
      const stored = await storedTask(items[i]!.task.id);
      expect(stored?.state).toBe('completed');
      expect(JSON.parse(JSON.stringify(stored!.artifacts))).toEqual(artifacts);
    }
    expect(warnings).toEqual([]);
  });

  it('two tasks of one user go in two statements, and both merges are kept', async () => {
    const { db, statements } = countingStatements(database.db);
    const writes = sharedTaskWrites(db, writeCommitterFor(db, 'postgres'), 1, log);
    const projectUserId = uid('same');
    const [busy, a, b] = [item(uid('busy'), {}), item(projectUserId, { a: 1 }), item(projectUserId, { b: 2 })];
    const results = await Promise.all([busy, a, b].map(writes));
    expect(statements).toEqual([1, 1, 1]);
    expect(dataOf(results[1])).toMatchObject({ projectUserId, properties: { a: 1 } });
    expect(dataOf(results[2])).toMatchObject({ projectUserId, properties: { a: 1, b: 2 } });
    expect((await storedUser(projectUserId))?.properties).toEqual({ a: 1, b: 2 });
  });

  it('a key held by a committed task fails the shared statement; the others are written alone, the holder nothing', async () => {
    const writes = sharedTaskWrites(database.db, writeCommitterFor(database.db, 'postgres'), 1, log);
    const key = uid('k');
    const [held, again, other] = [item(uid('held'), {}, key), item(uid('again'), {}, key), item(uid('other'), {})];
    const results = await Promise.all([held, again, other].map(writes));
    expect(results[0]).toBeDefined();
    expect(results[1]).toBeUndefined();
    expect(dataOf(results[2])).toMatchObject({ properties: {} });
    expect(await storedTask(again.task.id)).toBeUndefined();
    expect(await storedUser((again.write.params as { projectUserId: string }).projectUserId)).toBeUndefined();
    expect(await storedTask(other.task.id)).toBeDefined();
    // A held key is a constraint: expected, so nothing is logged.
    expect(warnings).toEqual([]);
  });

  it('a merge past the key limit leaves only its own task out of the shared statement', async () => {
    const full = uid('full');
    await sharedTaskWrites(
      database.db,
      writeCommitterFor(database.db, 'postgres'),
      1,
      log,
    )(item(full, Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`k${i}`, i]))));
    const { db, statements } = countingStatements(database.db);
    const writes = sharedTaskWrites(db, writeCommitterFor(db, 'postgres'), 1, log);
    const [first, over, fine] = [item(uid('first'), {}), item(full, { extra: 1 }), item(uid('fine'), { ok: true })];
    const results = await Promise.all([first, over, fine].map(writes));
    expect(statements).toEqual([1, 1]);
    expect(results[1]).toBeUndefined();
    expect(await storedTask(over.task.id)).toBeUndefined();
    expect(Object.keys((await storedUser(full))!.properties as object)).toHaveLength(256);
    expect(dataOf(results[2])).toMatchObject({ properties: { ok: true } });
  });

  it('a write without a form for many calls never shares: each task takes its own statement', async () => {
    const { db, statements } = countingStatements(database.db);
    const writes = sharedTaskWrites(db, writeCommitterFor(db, 'postgres'), 1, log);
    const items = Array.from({ length: 4 }, (_, i) => {
      const one = item(uid(`single-${i}`), { i });
      const { many: _many, ...write } = one.write;
      return { ...one, write };
    });
    const results = await Promise.all(items.map(writes));
    expect(statements).toEqual([1, 1, 1, 1]);
    for (const [i, artifacts] of results.entries()) expect(dataOf(artifacts)).toMatchObject({ properties: { i } });
  });

  it('a write that fails to build is logged unless the input was refused; either way the transaction records the task', async () => {
    const logged: unknown[] = [];
    const logger = {
      info: () => undefined,
      warn: (...args: unknown[]) => void logged.push(args),
      error: () => undefined,
    };
    const skillOf = (write: () => never, run: () => Promise<SkillResult>): AnySkill => ({
      descriptor: {
        id: 'test-write',
        name: 'Test write',
        description: 'A write that fails to build',
        tags: [],
        examples: [],
      },
      atomic: true,
      parse: (data) => data,
      run,
      write,
    });
    const run = (skill: AnySkill) => {
      const ctx: RunContext = {
        db: database.db,
        writes: writeCommitterFor(database.db, 'postgres'),
        clock: systemClock,
        updates: { publish: async () => undefined, publishLocal: () => undefined } as unknown as StatusUpdateBus,
        projectId,
        skill: { deps: {} as SkillDeps, db: database.db, projectId },
        taskWrites: sharedTaskWrites(database.db, writeCommitterFor(database.db, 'postgres'), 2, log),
        logger,
      };
      const message = { messageId: newId(), role: 'user' as const, parts: [{ data: {} }] };
      return runTask(ctx, { taskId: newTimeOrderedId(), message, invocation: { skill, input: {} } });
    };
    const broken = await run(
      skillOf(
        () => {
          throw new Error('broken build');
        },
        () => Promise.resolve({ artifactName: 'user-result', data: { ran: true } }),
      ),
    );
    expect(broken.status.state).toBe('completed');
    expect(broken.artifacts[0]?.parts[0]).toEqual({ data: { ran: true } });
    expect((await storedTask(broken.id))?.state).toBe('completed');
    expect(logged).toHaveLength(1);
    expect(JSON.stringify(logged[0])).toContain('building the one-statement task write failed');
    const refusal = () => {
      throw new AppError('invalid', 'INVALID_INPUT', 'refused');
    };
    const refused = await run(
      skillOf(refusal, () => Promise.reject(new AppError('invalid', 'INVALID_INPUT', 'refused'))),
    );
    expect(refused.status.state).toBe('rejected');
    expect((await storedTask(refused.id))?.state).toBe('rejected');
    expect(logged).toHaveLength(1);
  });

  it('a shared statement that breaks unexpectedly is logged, and each task is written alone', async () => {
    const db: Db = failingStatements(database.db, (text) => text.includes('with task as'));
    const writes = sharedTaskWrites(db, writeCommitterFor(db, 'postgres'), 1, log);
    const items = Array.from({ length: 5 }, (_, i) => item(uid(`broken-${i}`), { i }));
    const results = await Promise.all(items.map(writes));
    for (const [i, artifacts] of results.entries()) expect(dataOf(artifacts)).toMatchObject({ properties: { i } });
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings[0])).toContain('shared task write failed');
  });
});

describe.each(TEST_DIALECTS)('concurrent create-user tasks on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  it('each of 60 concurrent tasks (12 users) completes with its own user, and every merge is kept', async () => {
    const users = Array.from({ length: 12 }, () => uid('cc'));
    const sends = Array.from({ length: 60 }, (_, i) =>
      rpc(
        ctx(),
        'SendMessage',
        { message: v1Message({ skill: 'create-user', projectUserId: users[i % 12], properties: { [`p${i}`]: i } }) },
        { version: '1.0' },
      ),
    );
    const tasks = (await Promise.all(sends)).map((response) => response.json().result.task);
    for (const [i, task] of tasks.entries()) {
      expect(task.status.state).toBe('TASK_STATE_COMPLETED');
      const data = task.artifacts[0].parts[0].data;
      expect(data.projectUserId).toBe(users[i % 12]);
      expect(data.properties[`p${i}`]).toBe(i);
      const stored = (await rpc(ctx(), 'GetTask', { id: task.id }, { version: '1.0' })).json().result;
      expect(stored.artifacts).toEqual(task.artifacts);
    }
    for (const [u, projectUserId] of users.entries()) {
      const user = (
        await ctx().inject({ method: 'GET', url: `/api/v1/users/${projectUserId}`, headers: ctx().secret })
      ).json();
      const expected = Object.fromEntries(Array.from({ length: 5 }, (_, j) => u + 12 * j).map((i) => [`p${i}`, i]));
      expect(user.properties).toEqual(expected);
    }
  });
});
