import { describe, expect, it } from 'vitest';
import { insertSlots, loggedSends, loggedSendsQuery } from '../../src/campaigns/policies/send-log.repository.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createUser } from './campaign-helpers.js';

// The send gate's read of the send log (rules `frequency-caps` and `re-eligibility`): per batch, the
// batch's users' sends that a check needs, found by user however long the log is.
describe.each(TEST_DIALECTS)('the send log read of a batch on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  async function userIds(projectId: string, secret: Parameters<typeof createUser>[3], names: string[]) {
    for (const name of names) await createUser(ctx(), name, {}, secret);
    const rows = await ctx()
      .database.db.selectFrom('users')
      .select(['id', 'project_user_id'])
      .where('project_id', '=', projectId)
      .execute();
    return names.map((name) => rows.find((r) => r.project_user_id === name)!.id);
  }

  it('answers each asked user the sends any of its three conditions selects, once each, and no one else', async () => {
    const { project, secret } = await ctx().newProject('send-log-read');
    const [a, b, other] = await userIds(project.project_id, secret, ['a', 'b', 'other']);
    const slot = (triggerId: string, userId: string, campaignId: string, sentAt: number, counts = 1) => ({
      trigger_id: triggerId,
      user_id: userId,
      project_id: project.project_id,
      campaign_id: campaignId,
      batch_no: 0,
      tags: '["promo"]',
      counts,
      sent_at: sentAt,
    });
    await insertSlots(ctx().database.db, [
      slot('t-now', a!, 'c1', 10), // this trigger's own slot, however old
      slot('t-recent', a!, 'c2', 1_000), // since the caps' window: counted
      slot('t-uncounted', a!, 'c2', 1_000, 0), // in the window but not counted toward caps
      slot('t-old', b!, 'c1', 50), // before the caps' window, but the campaign's own send in its window
      slot('t-older', b!, 'c2', 40), // neither
      slot('t-recent', other!, 'c2', 1_000), // a user not asked about
    ]);
    // A user named twice is still answered once per send.
    const sends = await loggedSends(ctx().database.db, [a!, b!, a!], 500, { campaignId: 'c1', since: 45 }, 't-now');
    const got = sends.map((s) => [s.userId === a ? 'a' : 'b', s.triggerId, s.counts, s.tags]).sort();
    expect(got).toEqual([
      ['a', 't-now', true, ['promo']],
      ['a', 't-recent', true, ['promo']],
      ['b', 't-old', true, ['promo']],
    ]);
    expect(await loggedSends(ctx().database.db, [], 500, undefined, 't-now')).toEqual([]);
  });

  it.runIf(dialect === 'sqlite')('reads by user through an index, the batch list as the outer loop', async () => {
    const query = loggedSendsQuery(ctx().database.db, ['u1', 'u2'], 500, { campaignId: 'c1', since: 0 }, 't').compile(
      ctx().database.db,
    );
    const plan = (
      await ctx().database.db.executeQuery<{ detail: string }>({ ...query, sql: `explain query plan ${query.sql}` })
    ).rows.map((r) => r.detail);
    // The list first, then a search of the log by user_id: never a range over every send since the window's start.
    expect(plan[0]).toMatch(/^SCAN list/);
    expect(plan[1]).toMatch(/^SEARCH s USING (COVERING )?INDEX user_sends_campaign \(user_id=\?/);
    expect(plan.join('\n')).not.toMatch(/sent_at>|MULTI-INDEX OR/);
  });
});
