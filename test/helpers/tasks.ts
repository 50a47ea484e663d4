import { insertTask } from '../../src/a2a/tasks/tasks.repository.js';
import { uid } from '../a2a/a2a-helpers.js';
import type { TestContext } from './test-app.js';

/**
 * A task stored `working`, as a staged skill leaves it while it runs (built-in skills finish within
 * the request), for cancel, subscribe and push-config tests; it holds its request's idempotency key
 * when given one.
 */
export async function workingTask(
  ctx: TestContext,
  projectId = ctx.project.project_id,
  options: { contextId?: string; key?: { key: string; hash: string } } = {},
): Promise<string> {
  const id = uid('task');
  const contextId = options.contextId ?? 'ctx-working';
  const now = Date.now();
  const message = {
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
      [message],
      [],
      options.key,
    ),
  );
  return id;
}
