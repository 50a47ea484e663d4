import { sql, type Expression, type RawBuilder } from 'kysely';
import type { Db, DevicesTable } from '../db/database.js';
import { paddedList } from '../db/statement-shapes.js';

export type DeviceRow = DevicesTable & { project_user_id: string };

const deviceColumns = [
  'devices.project_id',
  'devices.device_id',
  'devices.user_id',
  'devices.platform',
  'devices.provider',
  'devices.push_address',
  'devices.push_keys',
  'devices.status',
  'devices.disabled_reason',
  'devices.created_at',
  'devices.updated_at',
  'users.project_user_id',
] as const;

export function selectDevices(db: Db, projectId: string) {
  return db
    .selectFrom('devices')
    .innerJoin('users', 'users.id', 'devices.user_id')
    .select(deviceColumns)
    .where('devices.project_id', '=', projectId);
}

/**
 * Whether a write lost a race to a concurrent transaction on a unique key or a lock (PostgreSQL
 * `23505` unique violation, `40P01` deadlock); retrying the transaction resolves it. SQLite
 * serialises writers, so it never loses such a race.
 */
export function isConcurrentWriteConflict(error: unknown): boolean {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return code === '23505' || code === '40P01';
}

export function findDevice(db: Db, projectId: string, deviceId: string): Promise<DeviceRow | undefined> {
  return selectDevices(db, projectId).where('devices.device_id', '=', deviceId).executeTakeFirst();
}

/** Bulk lookups for sends: one query per up to 500 ids instead of one per item. */
const LOOKUP_CHUNK = 500;

/**
 * Each chunk's IN list padded to a power of two (src/db/statement-shapes.ts): a send's target count
 * varies from request to request, and each count would otherwise be a statement text of its own,
 * cached by SQLite and, on PostgreSQL, taking one of the process's named statements.
 */
async function inChunks<T>(ids: string[], query: (chunk: string[]) => Promise<T[]>): Promise<T[]> {
  const rows: T[] = [];
  for (let i = 0; i < ids.length; i += LOOKUP_CHUNK)
    rows.push(...(await query(paddedList(ids.slice(i, i + LOOKUP_CHUNK), LOOKUP_CHUNK))));
  return rows;
}

export function findDevicesByIds(db: Db, projectId: string, deviceIds: string[]): Promise<DeviceRow[]> {
  return inChunks(deviceIds, (chunk) => selectDevices(db, projectId).where('devices.device_id', 'in', chunk).execute());
}

export function findDevicesOfUsers(db: Db, projectId: string, projectUserIds: string[]): Promise<DeviceRow[]> {
  return inChunks(projectUserIds, (chunk) =>
    selectDevices(db, projectId)
      .where('users.project_user_id', 'in', chunk)
      .orderBy('devices.created_at')
      .orderBy('devices.device_id')
      .execute(),
  );
}

export function listUserDevices(db: Db, projectId: string, userId: string): Promise<DeviceRow[]> {
  return selectDevices(db, projectId)
    .where('devices.user_id', '=', userId)
    .orderBy('devices.created_at')
    .orderBy('devices.device_id')
    .execute();
}

export async function deleteDevice(db: Db, projectId: string, deviceId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('devices')
    .where('project_id', '=', projectId)
    .where('device_id', '=', deviceId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Token hygiene: a provider said the address is gone. Only the row still holding it is removed. */
export async function deleteDeviceByAddress(
  db: Db,
  projectId: string,
  provider: DevicesTable['provider'],
  pushAddress: string,
): Promise<number> {
  const result = await db
    .deleteFrom('devices')
    .where('project_id', '=', projectId)
    .where('provider', '=', provider)
    .where('push_address', '=', pushAddress)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function disableDevice(
  db: Db,
  projectId: string,
  deviceId: string,
  reason: string,
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable('devices')
    .set({ status: 'disabled', disabled_reason: reason, updated_at: now })
    .where('project_id', '=', projectId)
    .where('device_id', '=', deviceId)
    .where('status', '=', 'active')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

const ownDeviceColumns = [
  'project_id',
  'device_id',
  'user_id',
  'platform',
  'provider',
  'push_address',
  'push_keys',
  'status',
  'disabled_reason',
  'created_at',
  'updated_at',
] as const;

/**
 * Active devices of the users (optionally only those registered by `createdBefore`), ordered by
 * user then device. The user ids come from one project's queries, so they alone select the right
 * devices (index `devices_user`); a `project_id` term would steer SQLite onto the primary key and
 * scan the whole project.
 */
export function findActiveDevicesOfUserIds(db: Db, userIds: string[], createdBefore?: number): Promise<DevicesTable[]> {
  let query = db
    .selectFrom('devices')
    .select(ownDeviceColumns)
    // Padded to a power of two: a campaign batch's ~1,000 ids vary in number, and each length would be
    // a statement of its own in SQLite's cache (src/db/statement-shapes.ts).
    .where('user_id', 'in', paddedList(userIds, Infinity))
    .where('status', '=', 'active');
  if (createdBefore !== undefined) query = query.where('created_at', '<=', createdBefore);
  return query.orderBy('user_id').orderBy('device_id').execute();
}

/** The owner and status of each device id that exists. */
export function findDeviceOwners(db: Db, projectId: string, deviceIds: string[]) {
  return db
    .selectFrom('devices')
    .select(['device_id', 'user_id', 'status'])
    .where('project_id', '=', projectId)
    .where('device_id', 'in', deviceIds)
    .execute();
}

/** SQL: how many active devices the user `userId` (an expression of the outer query) registered by `registeredBy`. */
export function activeDeviceCount(userId: Expression<string>, registeredBy: number): RawBuilder<number> {
  return sql<number>`(select count(*) from devices where devices.user_id = ${userId} and devices.status = 'active' and devices.created_at <= ${registeredBy})`;
}
