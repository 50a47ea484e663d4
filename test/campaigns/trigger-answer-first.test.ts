import diagnostics from 'node:diagnostics_channel';
import type { ServerResponse } from 'node:http';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createJobRunner, type JobRunner } from '../../src/jobs/jobs.js';
import type { JobHandlers } from '../../src/jobs/job-types.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';
import { createCampaign, createUser } from './campaign-helpers.js';

/**
 * The `:trigger` answer is written before the trigger's plan starts in the same process. On SQLite
 * a job runner in the enqueuing process is woken directly, and the plan and its first batches run
 * synchronous queries for a while: started ahead of the answer they would hold it back by as long.
 */
describe.each(TEST_DIALECTS)('the trigger call answers before its plan starts (%s)', (dialect) => {
  const ctx = useTestContext(dialect);
  let runner: JobRunner | undefined;
  afterEach(async () => {
    await runner?.stop();
    runner = undefined;
  });

  it('over HTTP, with a job runner in the process', async () => {
    const { secret } = await ctx().newProject('answer-first');
    await createUser(ctx(), 'u1', { plan: 'pro' }, secret);
    const campaignId = await createCampaign(ctx(), { message: { title: 'Hi' } }, secret);
    const events: string[] = [];
    const handlers = ctx().herald.jobHandlers;
    const plan = handlers['campaign.plan']!;
    const observed: JobHandlers = {
      ...handlers,
      'campaign.plan': Object.assign((...args: Parameters<typeof plan>) => {
        events.push('plan started');
        return plan(...args);
      }, plan),
    };
    runner = createJobRunner({
      db: ctx().database.db,
      listenPool: ctx().database.listenPool,
      logger: pino({ level: 'silent' }),
      handlers: observed,
      concurrency: 4,
      pollIntervalMs: 60_000, // only the enqueue's wake-up starts the plan
      leaseMs: 30_000,
    });
    await runner.start();
    const base = await ctx().app.listen({ port: 0, host: '127.0.0.1' });
    const onFinish = ({ response }: { response: ServerResponse }) => {
      if (response.req.url?.endsWith(':trigger')) events.push('answer written');
    };
    diagnostics.subscribe('http.server.response.finish', onFinish as (message: unknown) => void);
    try {
      const res = await fetch(`${base}/api/v1/campaigns/${campaignId}:trigger`, {
        method: 'POST',
        headers: { ...secret, 'content-type': 'application/json' },
        body: JSON.stringify({ audience: { broadcast: true } }),
      });
      expect(res.status).toBe(200);
      await waitFor(() => events.includes('plan started'), { what: 'the plan to start' });
      expect(events.slice(0, 2)).toEqual(['answer written', 'plan started']);
    } finally {
      diagnostics.unsubscribe('http.server.response.finish', onFinish as (message: unknown) => void);
    }
  });
});
