import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.js';
import { writeCommitterFor } from '../../src/db/group-commit.js';
import { sharedNewDeviceWrites } from '../../src/devices/new-device-writes.js';
import { systemClock } from '../../src/lib/clock.js';
import { newTimeOrderedId } from '../../src/lib/ids.js';
import { createProject } from '../../src/projects/projects.service.js';
import { countingStatements, failingStatements } from '../helpers/statements.js';
import { usePostgresProject } from '../helpers/postgres-project.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';

/*
 * Registrations of new device ids share statements under load on PostgreSQL
 * (src/devices/new-device-writes.ts): those that arrive while the in-flight limit is reached go
 * together, distinct push addresses in one statement, each user inserted once.
 */

describe.runIf(TEST_DIALECTS.includes('postgres'))('shared device registrations on postgres', () => {
  let database: TestDatabase;
  let projectId: string;
  const { warnings, log } = usePostgresProject('shared-devices', (db, id) => {
    database = db;
    projectId = id;
  });

  const writesOn = (db: Db) => sharedNewDeviceWrites(db, writeCommitterFor(db, 'postgres'), systemClock, 1, log);
  const input = (projectUserId: string, fcmToken: string) => ({
    project_user_id: projectUserId,
    platform: 'android' as const,
    fcm_token: fcmToken,
    device_id: newTimeOrderedId(),
  });
  const ownerOf = async (token: string) =>
    (
      await database.db
        .selectFrom('devices')
        .innerJoin('users', 'users.id', 'devices.user_id')
        .select(['users.project_user_id', 'devices.device_id', 'devices.user_id'])
        .where('devices.project_id', '=', projectId)
        .where('devices.push_address', '=', token)
        .execute()
    ).map((row) => ({ user: row.project_user_id, deviceId: row.device_id, userId: row.user_id }));

  it('registrations that arrive while the limit is reached share one statement, each answered with its own device', async () => {
    const { db, statements } = countingStatements(database.db);
    const writes = writesOn(db);
    const inputs = Array.from({ length: 9 }, (_, i) => input(`sd-${i % 3}`, `sd-token-${i}`));
    const devices = await Promise.all(inputs.map((body) => writes.write(projectId, body)));
    // The first alone; the eight that waited in one statement (three users, each inserted once).
    expect(statements).toEqual([1, 8]);
    for (const [i, device] of devices.entries()) {
      expect(device).toMatchObject({ deviceId: inputs[i]!.device_id, projectUserId: `sd-${i % 3}`, status: 'active' });
      expect(await ownerOf(`sd-token-${i}`)).toEqual([
        { user: `sd-${i % 3}`, deviceId: inputs[i]!.device_id, userId: device!.userId },
      ]);
    }
    const users = await database.db
      .selectFrom('users')
      .select('project_user_id')
      .where('project_id', '=', projectId)
      .where('project_user_id', 'like', 'sd-%')
      .execute();
    expect(users).toHaveLength(3);
    expect(warnings).toEqual([]);
  });

  it('a push address registered twice at once goes in two statements; the later registration owns it', async () => {
    const { db, statements } = countingStatements(database.db);
    const writes = writesOn(db);
    const first = input('addr-a', 'addr-shared');
    const second = input('addr-b', 'addr-shared');
    await Promise.all([
      writes.write(projectId, input('addr-lead', 'addr-lead')),
      writes.write(projectId, first),
      writes.write(projectId, input('addr-c', 'addr-other')),
      writes.write(projectId, second),
    ]);
    // The lead alone; `first` and `addr-other` together; `second` waited for `first`.
    expect(statements).toEqual([1, 2, 1]);
    expect(await ownerOf('addr-shared')).toEqual([
      { user: 'addr-b', deviceId: second.device_id, userId: expect.any(String) },
    ]);
  });

  it("one statement holds two projects' users of one id; each device goes to its own project's user", async () => {
    const other = (await createProject(database.db, systemClock, 'shared-devices-other')).project_id;
    const writes = writesOn(database.db);
    const [, mine, theirs] = await Promise.all([
      writes.write(projectId, input('two-lead', 'two-lead')),
      writes.write(projectId, input('two-same', 'two-mine')),
      writes.write(other, input('two-same', 'two-theirs')),
    ]);
    expect(mine!.userId).not.toBe(theirs!.userId);
    const rows = await database.db
      .selectFrom('devices')
      .innerJoin('users', 'users.id', 'devices.user_id')
      .select(['devices.project_id as deviceProject', 'users.project_id as userProject'])
      .where('devices.push_address', 'in', ['two-mine', 'two-theirs'])
      .execute();
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row.deviceProject).toBe(row.userProject);
  });

  it('a device whose user another transaction inserts meanwhile is written alone, to that user', async () => {
    const { db, statements } = countingStatements(database.db);
    const writes = writesOn(db);
    const racyUserId = newTimeOrderedId();
    let pending: Promise<unknown> = Promise.resolve();
    await database.db.transaction().execute(async (trx) => {
      const now = Date.now();
      await trx
        .insertInto('users')
        .values({
          id: racyUserId,
          project_id: projectId,
          project_user_id: 'racy',
          properties: '{}',
          created_at: now,
          updated_at: now,
        })
        .execute();
      // The shared statement waits on the uncommitted user's key, then finds it absent from its snapshot.
      pending = Promise.all([
        writes.write(projectId, input('racy-lead', 'racy-lead')),
        writes.write(projectId, input('racy', 'racy-device')),
        writes.write(projectId, input('racy-other', 'racy-other')),
      ]);
      await sleep(300);
    });
    const [, racy, other] = (await pending) as Awaited<ReturnType<typeof writes.write>>[];
    expect(racy).toMatchObject({ projectUserId: 'racy', userId: racyUserId });
    expect(other).toMatchObject({ projectUserId: 'racy-other' });
    expect(await ownerOf('racy-device')).toEqual([{ user: 'racy', deviceId: racy!.deviceId, userId: racyUserId }]);
    // The lead alone; the shared statement wrote only `racy-other`; then `racy` alone.
    expect(statements).toEqual([1, 1, 1]);
    expect(warnings).toEqual([]);
  });

  it('a shared statement that fails is logged when unexpected, and each registration runs alone', async () => {
    const broken = failingStatements(database.db, (sql) => sql.includes('unnest('));
    const writes = writesOn(broken);
    const devices = await Promise.all(
      ['fail-lead', 'fail-a', 'fail-b'].map((id) => writes.write(projectId, input(id, id))),
    );
    expect(devices.map((d) => d!.projectUserId)).toEqual(['fail-lead', 'fail-a', 'fail-b']);
    expect(warnings).toHaveLength(1);
    expect(String((warnings[0] as [{ err: unknown }])[0].err)).toMatch(/broken shared statement/);
  });
});

describe.each(TEST_DIALECTS)('concurrent registrations over HTTP on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const register = (c: TestContext, body: object) =>
    c.inject({ method: 'POST', url: '/api/v1/devices', headers: c.public, payload: body });

  it('120 registrations at once, users shared and addresses repeated: each answered, each address held once', async () => {
    const bodies = Array.from({ length: 120 }, (_, i) => ({
      project_user_id: `many-${i % 7}`,
      platform: 'android',
      fcm_token: `many-token-${i % 100}`,
    }));
    const results = await Promise.all(bodies.map((body) => register(ctx(), body)));
    expect(results.map((r) => r.statusCode)).toEqual(Array(120).fill(200));
    const devices = await ctx()
      .database.db.selectFrom('devices')
      .innerJoin('users', 'users.id', 'devices.user_id')
      .select(['devices.device_id', 'devices.push_address', 'users.project_user_id'])
      .where('devices.project_id', '=', ctx().project.project_id)
      .where('devices.push_address', 'like', 'many-token-%')
      .execute();
    expect(devices).toHaveLength(100);
    // Each address's device is one of the registrations of that address, answered as its own.
    const answered = new Map(results.map((r, i) => [r.json<{ device_id: string }>().device_id, bodies[i]!]));
    for (const device of devices) {
      const body = answered.get(device.device_id);
      expect(body).toMatchObject({ fcm_token: device.push_address, project_user_id: device.project_user_id });
    }
    const users = await ctx()
      .database.db.selectFrom('users')
      .select('id')
      .where('project_id', '=', ctx().project.project_id)
      .where('project_user_id', 'like', 'many-%')
      .execute();
    expect(users).toHaveLength(7);
  });
});
