import { Kysely } from 'kysely';
import { describe, expect, it, vi } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { inListLengthsWhile } from '../helpers/statements.js';

/*
 * An event batch creates the users it names that do not exist yet (src/users/users.repository.ts,
 * `ensureUsers`) in statements whose sizes are powers of two, and reads their ids back with a padded
 * IN list (src/db/statement-shapes.ts): batches of any size share a few statement texts, which SQLite
 * caches one per text and PostgreSQL names a bounded number of per process.
 */

/** The row counts of the user INSERTs and the lengths of the user id lists run while `run` runs. */
async function userStatementsWhile(run: () => Promise<void>): Promise<{ inserts: number[]; lookups: number[] }> {
  const executed = vi.spyOn(Kysely.prototype, 'executeQuery');
  try {
    const lookups = await inListLengthsWhile(run, '"project_user_id"');
    const inserts = executed.mock.calls
      .map(([query]) => (query as { sql: string }).sql)
      .filter((text) => /^insert into "users"/.test(text))
      .map((text) => text.split('), (').length);
    return { inserts, lookups };
  } finally {
    executed.mockRestore();
  }
}

describe.each(TEST_DIALECTS)('the users of an event batch on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  const track = async (projectUserIds: string[]) => {
    const res = await ctx().inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: ctx().secret,
      payload: { events: projectUserIds.map((project_user_id) => ({ project_user_id, name: 'opened' })) },
    });
    expect(res.statusCode, res.body).toBe(200);
  };

  const eventsOf = async (projectUserId: string) => {
    const res = await ctx().inject({
      method: 'GET',
      url: `/api/v1/users/${projectUserId}/events`,
      headers: ctx().secret,
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ events: unknown[] }>().events.length;
  };

  it('are created in power-of-two statements and looked up with a padded list; each gets its events', async () => {
    await track(['batch-old']);
    const batches = [
      ['batch-a1', 'batch-a2', 'batch-a3'],
      ['batch-old', 'batch-b1', 'batch-b2', 'batch-b3', 'batch-b4'],
      ['batch-c1', 'batch-c2', 'batch-c3', 'batch-c4', 'batch-c5', 'batch-c1', 'batch-c6'],
    ];
    const { inserts, lookups } = await userStatementsWhile(async () => {
      for (const batch of batches) await track(batch);
    });
    // 3 users: 2 + 1 rows; 5: 4 + 1; 6 distinct of 7 events: 4 + 2.
    expect(inserts).toEqual([2, 1, 4, 1, 4, 2]);
    expect(lookups).toEqual([4, 8, 8]);
    // Padding repeats a name in the lookup only: every user exists once, with its own events.
    expect(await eventsOf('batch-old')).toBe(2);
    expect(await eventsOf('batch-c1')).toBe(2);
    for (const id of ['batch-a3', 'batch-b4', 'batch-c6']) expect(await eventsOf(id)).toBe(1);
    const users = await ctx()
      .database.db.selectFrom('users')
      .select('project_user_id')
      .where('project_id', '=', ctx().project.project_id)
      .where('project_user_id', 'like', 'batch-%')
      .execute();
    expect(users).toHaveLength(14);
  });
});
