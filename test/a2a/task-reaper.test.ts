import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { reapLapsedTasks } from '../../src/a2a/tasks/task-leases.js';
import { insertTaskLease } from '../../src/a2a/tasks/task-leases.repository.js';
import { createTaskEventBus } from '../../src/a2a/tasks/task-events.js';
import { writeBatcherFor } from '../../src/db/write-batcher.js';
import { systemClock } from '../../src/lib/clock.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { workingTask } from '../helpers/tasks.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { rpc, uid, v1Message } from './a2a-helpers.js';

/**
 * What an instance killed mid-skill leaves behind: the task `working`, holding the request's
 * idempotency key (in progress while the task runs), and its lease.
 */
async function abandonedTask(ctx: TestContext, key: string, leaseUntil: number): Promise<string> {
  const id = await workingTask(ctx, undefined, {
    contextId: 'ctx-lost',
    key: { key: `h:${key}`, hash: 'the-lost-request' },
  });
  await insertTaskLease(ctx.database.db, id, ctx.project.project_id, leaseUntil);
  return id;
}

describe.each(TEST_DIALECTS)('A2A tasks whose instance died, on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const reap = async () => {
    const events = createTaskEventBus(undefined, pino({ level: 'silent' }));
    try {
      return await reapLapsedTasks({
        db: ctx().database.db,
        writes: writeBatcherFor(ctx().database.db, dialect),
        clock: systemClock,
        events,
      });
    } finally {
      await events.close();
    }
  };
  const send = (key: string) =>
    rpc(
      ctx(),
      'SendMessage',
      { message: v1Message({ skill: 'create-user', projectUserId: uid('u') }) },
      { version: '1.0', headers: { 'x-service-idempotency-key': key } },
    );

  it('are failed with a reason after their lease, and the client retry runs at once instead of 409', async () => {
    const key = uid('lost');
    const taskId = await abandonedTask(ctx(), key, Date.now() - 1);
    expect((await send(key)).statusCode).toBe(409);

    expect(await reap()).toBeGreaterThanOrEqual(1);
    const task = (await rpc(ctx(), 'GetTask', { id: taskId }, { version: '1.0' })).json().result;
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(task.status.message.metadata).toEqual({ reason: 'INSTANCE_LOST' });
    expect(
      await ctx().database.db.selectFrom('a2a_task_leases').select('task_id').where('task_id', '=', taskId).execute(),
    ).toEqual([]);

    const retry = await send(key);
    expect(retry.statusCode).toBe(200);
    expect(retry.json().result.task.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('leaves a task whose lease is still running alone, key reserved', async () => {
    const key = uid('alive');
    const taskId = await abandonedTask(ctx(), key, Date.now() + 60_000);
    await reap();
    expect((await rpc(ctx(), 'GetTask', { id: taskId }, { version: '1.0' })).json().result.status.state).toBe(
      'TASK_STATE_WORKING',
    );
    expect((await send(key)).statusCode).toBe(409);
  });

  it('a staged task that finishes drops its lease, and a completed key keeps replaying after the reaper ran', async () => {
    const key = uid('done');
    const message = v1Message({
      skill: 'send-push-notification',
      notifications: [{ target: { deviceId: 'nope' }, title: 'Hi' }],
    });
    const res = await rpc(
      ctx(),
      'SendMessage',
      { message },
      { version: '1.0', headers: { 'x-service-idempotency-key': key } },
    );
    const task = res.json().result.task;
    // No push credentials in this project: the skill ends failed; what matters is that it ended.
    expect(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED']).toContain(task.status.state);
    expect(
      await ctx().database.db.selectFrom('a2a_task_leases').select('task_id').where('task_id', '=', task.id).execute(),
    ).toEqual([]);
    await reap();
    const replay = await rpc(
      ctx(),
      'SendMessage',
      { message },
      { version: '1.0', headers: { 'x-service-idempotency-key': key } },
    );
    expect(replay.json().result.task.id).toBe(task.id);
  });
});
