import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import type { TestContext } from '../helpers/test-app.js';
import { waitFor } from '../helpers/wait-for.js';

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
