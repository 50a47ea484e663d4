import type { Db, DevicesTable } from '../db/database.js';
import { sql, type RawBuilder } from 'kysely';
import { preparedCommand, preparedQuery } from '../db/prepared.js';
import type { EnsureParams } from '../users/users.service.js';

/*
 * The statements of a device registration, compiled once per dialect (src/db/prepared.ts): a
 * registration is one of the hottest writes, and building and compiling its four statements with
 * Kysely cost more than running them on SQLite.
 */

/** What a registration needs to know of the device id's current row: its user and push address. */
export const findRegisteredDevice = preparedQuery(
  ['projectId', 'deviceId'],
  (db: Db, p: { projectId: string; deviceId: string }) =>
    db
      .selectFrom('devices')
      .innerJoin('users', 'users.id', 'devices.user_id')
      .select(['users.project_user_id', 'devices.provider', 'devices.push_address'])
      .where('devices.project_id', '=', p.projectId)
      .where('devices.device_id', '=', p.deviceId),
);

/** Removes the device id's row when it holds another push address; answers its creation time. */
export const deleteMovedDevice = preparedQuery(
  ['projectId', 'deviceId', 'provider', 'pushAddress'],
  (db: Db, p: { projectId: string; deviceId: string; provider: DevicesTable['provider']; pushAddress: string }) =>
    db
      .deleteFrom('devices')
      .where('project_id', '=', p.projectId)
      .where('device_id', '=', p.deviceId)
      .where((eb) => eb.or([eb('provider', '!=', p.provider), eb('push_address', '!=', p.pushAddress)]))
      .returning('created_at'),
);

export type DeviceUpsert = Omit<DevicesTable, 'status' | 'disabled_reason'>;

const upsertColumns = [
  'project_id',
  'device_id',
  'user_id',
  'platform',
  'provider',
  'push_address',
  'push_keys',
  'created_at',
  'updated_at',
] as const;

/**
 * Inserts the device, or takes over the row holding its push address (rule `devices`): that row becomes this
 * device, which moves the address to this device's user, so concurrent registrations of one address
 * queue on that row instead of failing. The row keeps its creation time only when it already was
 * this device.
 */
function upsert(db: Pick<Db, 'insertInto'>, row: DeviceUpsert | DeviceOfEnsuredUser) {
  return db
    .insertInto('devices')
    .values({ ...row, status: 'active', disabled_reason: null })
    .onConflict((oc) =>
      oc.columns(['project_id', 'provider', 'push_address']).doUpdateSet((eb) => ({
        device_id: row.device_id,
        // The proposed row's: a value or, for `newDeviceOfEnsuredUser`, the subquery that found it.
        user_id: eb.ref('excluded.user_id'),
        platform: row.platform,
        push_keys: row.push_keys,
        status: 'active',
        disabled_reason: null,
        created_at: eb
          .case()
          .when('devices.device_id', '=', row.device_id)
          .then(eb.ref('devices.created_at'))
          .else(row.created_at)
          .end(),
        updated_at: row.updated_at,
      })),
    );
}

/** The upsert of a known device id: answers the stored creation time (the row's own when it already was this device). */
export const upsertDevice = preparedQuery(upsertColumns, (db: Db, row: DeviceUpsert) =>
  upsert(db, row).returning('created_at'),
);

/**
 * The upsert of a device id Herald just generated: no row can already be this device, so the stored
 * creation time is the one given, and the statement returns nothing (cheaper on SQLite than a `RETURNING`).
 */
export const insertNewDevice = preparedCommand(upsertColumns, upsert);

type DeviceOfEnsuredUser = Omit<DeviceUpsert, 'user_id'> & { user_id: RawBuilder<string> };

type NewDeviceOfUser = EnsureParams & Omit<DeviceUpsert, 'user_id'>;

/** A builder that starts a statement with the CTE `ensured_user`, the id of the user it finds or inserts. */
export type EnsuredUserBuilder = (db: Db, user: EnsureParams) => unknown;

const ensuredUserNames: (keyof EnsureParams)[] = ['id', 'projectId', 'projectUserId', 'now'];
const newDeviceColumns = upsertColumns.filter(
  (c): c is Exclude<(typeof upsertColumns)[number], 'user_id'> => c !== 'user_id',
);

/**
 * `insertNewDevice` for the user `withUser` finds or inserts, in that one statement (where a statement
 * may hold a write in WITH: PostgreSQL), compiled once like the others. Answers the user's id. When
 * that CTE found no id (a concurrent insert of the user), the statement fails on the NOT NULL user id
 * and writes nothing.
 */
export function newDeviceOfEnsuredUser(withUser: EnsuredUserBuilder) {
  const statement = preparedQuery<NewDeviceOfUser, { user_id: string }>(
    [...ensuredUserNames, ...newDeviceColumns],
    (db: Db, p) => {
      const { id, projectId, projectUserId, now, ...row } = p;
      const start = withUser(db, { id, projectId, projectUserId, now }) as Db;
      const userId = sql<string>`(select id from ensured_user limit 1)`;
      return upsert(start, { ...row, user_id: userId }).returning('user_id');
    },
  );
  return async (db: Db, user: EnsureParams, row: Omit<DeviceUpsert, 'user_id'>): Promise<string> =>
    (await statement(db, { ...user, ...row }))[0]!.user_id;
}
