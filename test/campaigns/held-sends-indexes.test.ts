import type { CompiledQuery } from 'kysely';
import { describe, expect, it } from 'vitest';
import {
  cancelCampaignHeldSendsQuery,
  userHeldSendsQuery,
} from '../../src/campaigns/policies/held-sends.repository.js';
import { queryPlan } from '../helpers/query-plan.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

/**
 * Every lookup of held sends (rule `quiet-hours`) by user or by campaign goes through an index
 * (migration 0053), never a pass over every project's held sends: the user's list, the campaign's
 * cancel on pause, and the rows the user's and the campaign's foreign-key cascades delete (the
 * statements below are the lookups those cascades make). On PostgreSQL, sequential scans are turned
 * off for the plan, so a plan that still scans the table has no index to use.
 */
describe.each(TEST_DIALECTS)('held sends lookups on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  const planOf = (query: CompiledQuery) => queryPlan(ctx().database.db, query);

  const uses = (index: string) =>
    dialect === 'sqlite'
      ? new RegExp(`SEARCH held_sends USING (COVERING )?INDEX ${index} \\(`)
      : new RegExp(`Index.* using ${index} on held_sends`);

  it("finds a user's held sends, in due order, through held_sends_user, for the list and the user's deletion", async () => {
    const db = ctx().database.db;
    for (const state of [undefined, 'held'] as const)
      expect(await planOf(userHeldSendsQuery(db, 'p', 'u', state).compile())).toMatch(uses('held_sends_user'));
    const list = await planOf(userHeldSendsQuery(db, 'p', 'u', undefined).compile());
    expect(list).not.toMatch(/TEMP B-TREE FOR ORDER BY|Sort/);
    expect(await planOf(db.deleteFrom('held_sends').where('user_id', '=', 'u').compile())).toMatch(
      uses('held_sends_user'),
    );
  });

  it("finds a campaign's held sends through held_sends_by_campaign, for its pause and its deletion", async () => {
    const db = ctx().database.db;
    expect(await planOf(cancelCampaignHeldSendsQuery(db, 'p', 'c', 0).compile())).toMatch(
      uses('held_sends_by_campaign'),
    );
    const cascade = db.deleteFrom('held_sends').where('project_id', '=', 'p').where('campaign_id', '=', 'c');
    expect(await planOf(cascade.compile())).toMatch(uses('held_sends_by_campaign'));
  });
});
