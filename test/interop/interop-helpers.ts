import { insertTask } from '../../src/a2a/tasks/tasks.repository.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { uid } from '../a2a/a2a-helpers.js';
import type { TestContext } from '../helpers/test-app.js';
import { waitFor } from '../helpers/wait-for.js';

/** A task stored as a running skill leaves it (`working`), for cancel and subscribe: built-in skills finish within the request. */
export async function workingTask(ctx: TestContext, projectId: string, contextId = 'ctx-working'): Promise<string> {
  const id = uid('task');
  const now = Date.now();
  const user = {
    messageId: uid('m'),
    role: 'user' as const,
    parts: [{ data: { skill: 'send-push-notification' } }],
    taskId: id,
    contextId,
  };
  await ctx.database.db.transaction().execute((trx) =>
    insertTask(
      trx,
      { id, projectId, contextId, skill: 'send-push-notification', createdAt: now },
      [
        { state: 'submitted', timestamp: now },
        { state: 'working', timestamp: now },
      ],
      [user],
      [],
    ),
  );
  return id;
}

/** Runs the worker's real job handlers (as `createHerald` composes them) until the receiver has `count` webhooks. */
export async function deliverUntil(ctx: TestContext, hook: { received: unknown[] }, count: number): Promise<void> {
  await waitFor(
    async () => {
      await runJobsUntilIdle(ctx.database.db, ctx.herald.jobHandlers);
      return hook.received.length >= count;
    },
    { what: `${count} webhooks` },
  );
}
