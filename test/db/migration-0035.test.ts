import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/db/migrate.js';
import type { AnyKysely } from '../../src/db/database.js';
import { databaseBefore } from '../helpers/database-before.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

const MIGRATION = '0035-sqlite-pending-sends-without-foreign-keys';

const pendingSend = (id: string, projectId: string, campaignId: string, userId: string, eventId = `e-${id}`) => ({
  id,
  project_id: projectId,
  campaign_id: campaignId,
  user_id: userId,
  event_id: eventId,
  event_name: 'cart',
  event_properties: '{"items":2}',
  event_timestamp: 1,
  due_at: 2,
  state: 'pending' as const,
  reason: null,
  trigger_id: null,
  created_at: 1,
  updated_at: 1,
});

async function seed(db: AnyKysely, now: number): Promise<void> {
  await db
    .insertInto('projects')
    .values([
      { id: 'p1', name: 'p1', created_at: now },
      { id: 'p2', name: 'p2', created_at: now },
    ])
    .execute();
  const user = (id: string, projectId: string) => ({
    id,
    project_id: projectId,
    project_user_id: `app-${id}`,
    properties: '{}',
    created_at: now,
    updated_at: now,
  });
  await db
    .insertInto('users')
    .values([user('u1', 'p1'), user('u2', 'p1'), user('u3', 'p2')])
    .execute();
  const campaign = (projectId: string, campaignId: string) => ({
    project_id: projectId,
    campaign_id: campaignId,
    name: campaignId,
    status: 'active',
    api_triggered: 1,
    default_audience: '{"broadcast":true}',
    message: '{"title":"t"}',
    created_at: now,
    updated_at: now,
  });
  await db
    .insertInto('campaigns')
    .values([campaign('p1', 'c1'), campaign('p1', 'c2'), campaign('p2', 'c1')])
    .execute();
  await db
    .insertInto('event_pending_sends')
    .values([
      pendingSend('s1', 'p1', 'c1', 'u1'),
      pendingSend('s2', 'p1', 'c2', 'u1'),
      pendingSend('s3', 'p1', 'c1', 'u2'),
      pendingSend('s4', 'p2', 'c1', 'u3'),
    ])
    .execute();
}

const ids = async (db: AnyKysely) =>
  (await db.selectFrom('event_pending_sends').select('id').orderBy('id').execute()).map((r) => r.id);

describe.each(TEST_DIALECTS)('migration 0035 on %s', (dialect) => {
  let destroy: (() => Promise<void>) | undefined;
  afterEach(async () => destroy?.());

  async function migrated() {
    const before = await databaseBefore(dialect, MIGRATION);
    destroy = before.destroy;
    const db = before.handle.db as AnyKysely;
    await seed(db, Date.now());
    const rows = await db.selectFrom('event_pending_sends').selectAll().orderBy('id').execute();
    await migrateToLatest(db);
    return { db, rows };
  }

  it('keeps every pending send and one per (project, campaign, event)', async () => {
    const { db, rows } = await migrated();
    expect(await db.selectFrom('event_pending_sends').selectAll().orderBy('id').execute()).toEqual(rows);
    await expect(
      db
        .insertInto('event_pending_sends')
        .values(pendingSend('s9', 'p1', 'c1', 'u2', 'e-s1'))
        .execute(),
    ).rejects.toThrow(/unique|duplicate/i);
  });

  it("deletes a user's, a campaign's and a project's pending sends with them", async () => {
    const { db } = await migrated();
    await db.deleteFrom('users').where('id', '=', 'u2').execute();
    expect(await ids(db)).toEqual(['s1', 's2', 's4']);
    await db.deleteFrom('campaigns').where('project_id', '=', 'p1').where('campaign_id', '=', 'c2').execute();
    expect(await ids(db)).toEqual(['s1', 's4']);
    // A project's users and campaigns go by their own cascades, and their pending sends with them.
    await db.deleteFrom('projects').where('id', '=', 'p2').execute();
    expect(await ids(db)).toEqual(['s1']);
  });

  it('checks the user and campaign of a pending send on PostgreSQL only', async () => {
    const { db } = await migrated();
    const orphan = db
      .insertInto('event_pending_sends')
      .values(pendingSend('s8', 'p1', 'c1', 'no-such-user'))
      .execute();
    if (dialect === 'postgres') await expect(orphan).rejects.toThrow(/foreign key/i);
    else {
      await orphan;
      const keys = await sql<{
        table: string;
      }>`select "table" from pragma_foreign_key_list('event_pending_sends')`.execute(db);
      expect(keys.rows).toEqual([]);
    }
  });
});
