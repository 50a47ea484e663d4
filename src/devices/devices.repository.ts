import type { Db, DevicesTable } from '../db/database.js';

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
  return db.selectFrom('devices').innerJoin('users', 'users.id', 'devices.user_id').select(deviceColumns).where('devices.project_id', '=', projectId);
}

/**
 * Registers or refreshes a device. A push address belongs to one device (R8): another device row
 * holding the same address is removed first, which moves the address to this device's user.
 */
export async function upsertDevice(db: Db, row: Omit<DevicesTable, 'status' | 'disabled_reason'>): Promise<void> {
  await db
    .deleteFrom('devices')
    .where('project_id', '=', row.project_id)
    .where('provider', '=', row.provider)
    .where('push_address', '=', row.push_address)
    .where('device_id', '!=', row.device_id)
    .execute();
  await db
    .insertInto('devices')
    .values({ ...row, status: 'active', disabled_reason: null })
    .onConflict((oc) =>
      oc.columns(['project_id', 'device_id']).doUpdateSet({
        user_id: row.user_id,
        platform: row.platform,
        provider: row.provider,
        push_address: row.push_address,
        push_keys: row.push_keys,
        status: 'active',
        disabled_reason: null,
        updated_at: row.updated_at,
      }),
    )
    .execute();
}

export function findDevice(db: Db, projectId: string, deviceId: string): Promise<DeviceRow | undefined> {
  return selectDevices(db, projectId).where('devices.device_id', '=', deviceId).executeTakeFirst();
}

export function listUserDevices(db: Db, projectId: string, userId: string): Promise<DeviceRow[]> {
  return selectDevices(db, projectId).where('devices.user_id', '=', userId).orderBy('devices.created_at').orderBy('devices.device_id').execute();
}

export async function deleteDevice(db: Db, projectId: string, deviceId: string): Promise<boolean> {
  const result = await db.deleteFrom('devices').where('project_id', '=', projectId).where('device_id', '=', deviceId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Token hygiene: a provider said the address is gone. Only the row still holding it is removed. */
export async function deleteDeviceByAddress(db: Db, projectId: string, provider: DevicesTable['provider'], pushAddress: string): Promise<number> {
  const result = await db.deleteFrom('devices').where('project_id', '=', projectId).where('provider', '=', provider).where('push_address', '=', pushAddress).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function disableDevice(db: Db, projectId: string, deviceId: string, reason: string, now: number): Promise<void> {
  await db.updateTable('devices').set({ status: 'disabled', disabled_reason: reason, updated_at: now }).where('project_id', '=', projectId).where('device_id', '=', deviceId).execute();
}
