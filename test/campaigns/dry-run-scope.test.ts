import type { CompiledQuery, Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { queryPlan } from '../helpers/query-plan.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createCampaign, createUser, trigger } from './campaign-helpers.js';

/** Records every statement `db`'s own executor runs (not a transaction's) in `into`, until the returned stop. */
function recordStatements(db: Kysely<Database>, into: CompiledQuery[]): () => void {
  const executor = db.getExecutor();
  const run = executor.executeQuery.bind(executor);
  executor.executeQuery = (query, ...rest) => {
    into.push(query);
    return run(query, ...rest);
  };
  return () => {
    delete (executor as Partial<typeof executor>).executeQuery;
  };
}

/**
 * A broadcast dry run counts one project's users through an index by project, never by a pass over
 * every project's users (on SQLite it used to scan the whole table: a small project's count read a
 * large project's users too). On PostgreSQL sequential scans are turned off for the plan, so a plan
 * that still scans `users` has no index to use.
 */
describe.each(TEST_DIALECTS)('broadcast dry-run count on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  it("counts only the project's users, reading them through the project's index", async () => {
    const other = await ctx().newProject('other');
    for (const id of ['a1', 'a2', 'a3']) await createUser(ctx(), id, { plan: 'pro' }, other.secret);
    for (const id of ['b1', 'b2']) await createUser(ctx(), id, { plan: 'pro' });
    await createUser(ctx(), 'b3', { plan: 'free' });
    const campaignId = await createCampaign(ctx(), { segment: { property: 'plan', op: 'eq', value: 'pro' } });
    const statements: CompiledQuery[] = [];
    const stop = recordStatements(ctx().herald.database.dryRunDb, statements);
    const res = await trigger(ctx(), campaignId, { audience: { broadcast: true } }, { dryRun: true }).finally(stop);
    expect(res.statusCode).toBe(200);
    expect(res.json<{ counters: { in_segment: number } }>().counters.in_segment).toBe(2);

    const count = statements.find((s) => /count\(\*\) as in_segment/.test(s.sql));
    expect(count).toBeDefined();
    const plan = await queryPlan(ctx().database.db, count!);
    if (dialect === 'sqlite') {
      expect(plan).toMatch(/SEARCH users USING INDEX users_project_id \(project_id=\?\)/);
      expect(plan).not.toMatch(/SCAN users\b/);
    } else {
      expect(plan).toMatch(/Index Scan (on|using) users_project_id\b/);
      expect(plan).toMatch(/Index Cond: \(project_id = /);
      expect(plan).not.toMatch(/Seq Scan on users\b/);
    }
  });
});
