import { describe, expect, it } from 'vitest';
import { insertSlots } from '../../src/campaigns/policies/send-log.repository.js';
import { DAY_MS } from '../../src/lib/clock.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createCampaign, createUser, json } from '../campaigns/campaign-helpers.js';
import { movableClock, runRetentionJob } from './retention-helpers.js';

describe.each(TEST_DIALECTS)('send log retention on %s', (dialect) => {
  const { clock, start } = movableClock();
  const ctx = useTestContext(dialect, { overrides: { clock } });

  it('deletes sends no cap or re-eligibility rule can read; keeps once-ever and in-window ones', async () => {
    const { project, secret } = await ctx().newProject('send-log-retention');
    await createUser(ctx(), 'u', {}, secret);
    const always = await createCampaign(ctx(), {}, secret);
    const once = await createCampaign(ctx(), { reeligibility: { mode: 'once' } }, secret);
    const window = await createCampaign(ctx(), { reeligibility: { mode: 'window', seconds: 90 * 86_400 } }, secret);
    const gone = await createCampaign(ctx(), { reeligibility: { mode: 'once' } }, secret);
    const db = ctx().database.db;
    const userId = (
      await db
        .selectFrom('users')
        .select('id')
        .where('project_id', '=', project.project_id)
        .where('project_user_id', '=', 'u')
        .executeTakeFirstOrThrow()
    ).id;
    let n = 0;
    const row = (campaignId: string, daysAgo: number) => ({
      trigger_id: `t-${++n}`,
      user_id: userId,
      project_id: project.project_id,
      campaign_id: campaignId,
      batch_no: 0,
      tags: '[]',
      counts: 1,
      sent_at: start - daysAgo * DAY_MS,
    });
    const rows = [
      row(always, 29), // inside the longest cap window (30 days): kept
      row(always, 31), // older than any cap can read: deleted
      row(once, 400), // once ever: kept however old
      row(window, 80), // inside its 90-day window: kept
      row(window, 100), // past it: deleted
      row(gone, 45), // its campaign is deleted below: deleted
    ];
    await insertSlots(db, rows);
    expect((await json(ctx(), 'DELETE', `/api/v1/campaigns/${gone}`, undefined, secret)).statusCode).toBe(200);

    await runRetentionJob(ctx(), clock);
    const left = await db
      .selectFrom('user_sends')
      .select('trigger_id')
      .where('project_id', '=', project.project_id)
      .orderBy('trigger_id')
      .execute();
    expect(left.map((r) => r.trigger_id)).toEqual(['t-1', 't-3', 't-4']);

    // Time passes: the always-campaign's last row leaves the cap window; the once row stays.
    clock.t = start + 2 * DAY_MS;
    await runRetentionJob(ctx(), clock);
    const later = await db
      .selectFrom('user_sends')
      .select('trigger_id')
      .where('project_id', '=', project.project_id)
      .execute();
    expect(later.map((r) => r.trigger_id).sort()).toEqual(['t-3', 't-4']);
    clock.t = start;
  });
});
