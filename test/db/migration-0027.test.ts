import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/db/migrate.js';
import type { AnyKysely } from '../../src/db/database.js';
import { databaseBefore } from '../helpers/database-before.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

const MIGRATION = '0027-sqlite-devices-without-foreign-keys';

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
  const device = (deviceId: string, projectId: string, userId: string, extra: Record<string, unknown> = {}) => ({
    project_id: projectId,
    device_id: deviceId,
    user_id: userId,
    platform: 'android',
    provider: 'fcm',
    push_address: `token-${deviceId}`,
    push_keys: null,
    status: 'active',
    disabled_reason: null,
    created_at: now - 1000,
    updated_at: now,
    ...extra,
  });
  await db
    .insertInto('devices')
    .values([
      device('d1', 'p1', 'u1'),
      device('d2', 'p1', 'u1', {
        platform: 'web',
        provider: 'webpush',
        push_address: 'https://push.example/sub/1',
        push_keys: '{"p256dh":"k","auth":"a"}',
      }),
      device('d3', 'p1', 'u2', { status: 'disabled', disabled_reason: 'InvalidRegistration' }),
      device('d4', 'p2', 'u3'),
    ])
    .execute();
}

const allDevices = (db: AnyKysely) =>
  db.selectFrom('devices').selectAll().orderBy('project_id').orderBy('device_id').execute();

describe.each(TEST_DIALECTS)('migration 0027 on %s', (dialect) => {
  let destroy: (() => Promise<void>) | undefined;
  afterEach(async () => destroy?.());

  it('keeps every device row and the uniqueness of device ids and push addresses', async () => {
    const before = await databaseBefore(dialect, MIGRATION);
    destroy = before.destroy;
    const db = before.handle.db as AnyKysely;
    await seed(db, Date.now());
    const rows = await allDevices(db);
    expect(rows).toHaveLength(4);

    await migrateToLatest(db);

    expect(await allDevices(db)).toEqual(rows);
    const duplicate = (deviceId: string, address: string) =>
      db
        .insertInto('devices')
        .values({
          ...rows[0],
          device_id: deviceId,
          push_address: address,
        })
        .execute();
    await expect(duplicate('d1', 'another-token')).rejects.toThrow(/unique|duplicate/i);
    await expect(duplicate('d9', 'token-d1')).rejects.toThrow(/unique|duplicate/i);
  });

  it("deletes a user's devices with the user, and a project's devices with the project", async () => {
    const before = await databaseBefore(dialect, MIGRATION);
    destroy = before.destroy;
    const db = before.handle.db as AnyKysely;
    await seed(db, Date.now());
    await migrateToLatest(db);

    await db.deleteFrom('users').where('id', '=', 'u1').execute();
    expect((await allDevices(db)).map((d) => d.device_id)).toEqual(['d3', 'd4']);
    // A project's users go by their own cascade, and their devices with them.
    await db.deleteFrom('projects').where('id', '=', 'p2').execute();
    expect((await allDevices(db)).map((d) => d.device_id)).toEqual(['d3']);
  });

  it('checks device owners on PostgreSQL only (SQLite relies on the registration creating the user first)', async () => {
    const before = await databaseBefore(dialect, MIGRATION);
    destroy = before.destroy;
    const db = before.handle.db as AnyKysely;
    await seed(db, Date.now());
    await migrateToLatest(db);
    const orphan = db
      .insertInto('devices')
      .values({
        project_id: 'p1',
        device_id: 'd-orphan',
        user_id: 'no-such-user',
        platform: 'android',
        provider: 'fcm',
        push_address: 'token-orphan',
        created_at: 1,
        updated_at: 1,
      })
      .execute();
    if (dialect === 'postgres') await expect(orphan).rejects.toThrow(/foreign key/i);
    else {
      await orphan;
      const keys = await sql<{ table: string }>`select "table" from pragma_foreign_key_list('devices')`.execute(db);
      expect(keys.rows).toEqual([]);
    }
  });
});
