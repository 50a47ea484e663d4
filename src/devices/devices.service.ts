import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { newTimeOrderedId } from '../lib/ids.js';
import type { WriteCommitter } from '../db/group-commit.js';
import { ensureUser, getUser } from '../users/users.service.js';
import * as repo from './devices.repository.js';
import * as registration from './registration.repository.js';
import type { RegisterDeviceBody } from './devices.schemas.js';
import { deviceRowToDevice, newDeviceRow, registeredDevice, type Device, type Provider } from './device-rows.js';
import type { NewDeviceWrites } from './new-device-writes.js';

export { deviceRowToDevice, type Device, type Provider } from './device-rows.js';

/** Attempts at a registration that loses a race (one device id registered with two addresses at once). */
const REGISTER_ATTEMPTS = 6;

export interface RegisterDeviceOptions {
  /**
   * The public key's rule: a `device_id` already registered to another user stays with that user
   * (409) unless the call carries that device's current push address. Device ids can leak (logs,
   * support screenshots), push tokens only the device itself knows; a push address still moves to
   * the new user (rule `devices`) for that reason.
   */
  keepDeviceOwner?: boolean;
}

/**
 * Rule `devices`: registers or refreshes a device, creating its user if needed; the push address moves to it.
 * Pure database work on `db` (a transaction, or a unit of the group commit: safe to run again after
 * a rollback). Answers the device as stored.
 */
export async function writeDevice(
  db: Db,
  clock: Clock,
  projectId: string,
  input: RegisterDeviceBody & { device_id: string },
  options: RegisterDeviceOptions & { newDeviceId?: boolean } = {},
): Promise<Device> {
  const fresh = newDeviceRow(projectId, input, clock.now());
  const { provider, push_address: address, device_id: deviceId } = fresh;
  // A device id Herald just generated has no row yet: an app's first registration skips the read.
  const [existing] = options.newDeviceId ? [] : await registration.findRegisteredDevice(db, { projectId, deviceId });
  const moved = existing !== undefined && (existing.provider !== provider || existing.push_address !== address);
  if (options.keepDeviceOwner && moved && existing.project_user_id !== input.project_user_id)
    throw new AppError(
      'conflict',
      'DEVICE_OWNED_BY_ANOTHER_USER',
      'This device_id is registered to another user; the public key cannot move it (use the secret key)',
    );
  const userId = await ensureUser(db, clock, projectId, input.project_user_id);
  // A device that changes address keeps its creation time.
  const [previous] = moved
    ? await registration.deleteMovedDevice(db, { projectId, deviceId, provider, pushAddress: address })
    : [];
  const row = { ...fresh, user_id: userId, created_at: previous ? Number(previous.created_at) : fresh.created_at };
  let createdAt = row.created_at;
  if (options.newDeviceId) await registration.insertNewDevice(db, row);
  else createdAt = Number((await registration.upsertDevice(db, row))[0]!.created_at);
  return registeredDevice(input, userId, { ...row, created_at: createdAt });
}

/**
 * `writeDevice` through the group commit (on the embedded database concurrent registrations share
 * one commit). Concurrent registrations of one address queue on its row (the last to commit owns
 * it); the rare race left on PostgreSQL, one device id registered with two addresses at once, is retried.
 * A device id Herald generates goes first to `newDevices` (one statement on PostgreSQL), and to the
 * transaction only when that wrote nothing.
 */
export async function registerDevice(
  writes: WriteCommitter,
  clock: Clock,
  projectId: string,
  input: RegisterDeviceBody,
  options: RegisterDeviceOptions,
  newDevices: NewDeviceWrites,
): Promise<Device> {
  // Chosen once, so a retry registers the same device; time-ordered, so a new device's key goes at the
  // right edge of the primary-key index instead of dirtying a random page (src/lib/ids.ts).
  const withId = { ...input, device_id: input.device_id ?? newTimeOrderedId() };
  const writeOptions = { ...options, newDeviceId: input.device_id === undefined };
  if (writeOptions.newDeviceId) {
    const device = await newDevices.write(projectId, withId);
    if (device) return device;
  }
  for (let attempt = 1; ; attempt++) {
    try {
      return await writes.run((trx) => writeDevice(trx, clock, projectId, withId, writeOptions));
    } catch (error) {
      if (attempt >= REGISTER_ATTEMPTS || !repo.isConcurrentWriteConflict(error)) throw error;
      // A little jitter so the losers of one race do not collide again in lockstep.
      await sleep(Math.random() * 10 * attempt);
    }
  }
}

export async function listUserDevices(db: Db, projectId: string, projectUserId: string): Promise<Device[]> {
  const user = await getUser(db, projectId, projectUserId);
  return (await repo.listUserDevices(db, projectId, user.id)).map(deviceRowToDevice);
}

/** A user's devices by internal user id (the caller already holds the user). */
export async function devicesOfUserId(db: Db, projectId: string, userId: string): Promise<Device[]> {
  return (await repo.listUserDevices(db, projectId, userId)).map(deviceRowToDevice);
}

export async function findDevice(db: Db, projectId: string, deviceId: string): Promise<Device | undefined> {
  const row = await repo.findDevice(db, projectId, deviceId);
  return row && deviceRowToDevice(row);
}

/** Devices by id, in one query per 500 ids (push sends); absent ids are simply missing from the map. */
export async function findDevices(db: Db, projectId: string, deviceIds: string[]): Promise<Map<string, Device>> {
  const rows = await repo.findDevicesByIds(db, projectId, [...new Set(deviceIds)]);
  return new Map(rows.map((row) => [row.device_id, deviceRowToDevice(row)]));
}

/** Active devices of each named user that has any (push sends), oldest registration first. */
export async function activeDevicesOfUsers(
  db: Db,
  projectId: string,
  projectUserIds: string[],
): Promise<Map<string, Device[]>> {
  const byUser = new Map<string, Device[]>();
  for (const row of await repo.findDevicesOfUsers(db, projectId, [...new Set(projectUserIds)])) {
    if (row.status !== 'active') continue;
    byUser.set(row.project_user_id, [...(byUser.get(row.project_user_id) ?? []), deviceRowToDevice(row)]);
  }
  return byUser;
}

/**
 * Active devices of users named by id (campaign audiences): `users` maps each user id to its
 * `project_user_id`; only devices registered by `createdBefore` when given. Ordered by user, then device.
 */
export async function activeDevicesOfUserIds(
  db: Db,
  users: ReadonlyMap<string, string>,
  createdBefore?: number,
): Promise<Device[]> {
  if (users.size === 0) return [];
  const rows = await repo.findActiveDevicesOfUserIds(db, [...users.keys()], createdBefore);
  return rows.map((row) => deviceRowToDevice({ ...row, project_user_id: users.get(row.user_id)! }));
}

/** Who owns each named device, whatever its status; absent ids are left out. */
export async function deviceOwners(
  db: Db,
  projectId: string,
  deviceIds: string[],
): Promise<Array<{ deviceId: string; userId: string; active: boolean }>> {
  if (deviceIds.length === 0) return [];
  const rows = await repo.findDeviceOwners(db, projectId, deviceIds);
  return rows.map((r) => ({ deviceId: r.device_id, userId: r.user_id, active: r.status === 'active' }));
}

/**
 * An SQL expression counting a user's active devices registered by a time, for another feature's
 * aggregate over its users (a campaign dry run counts a whole segment in one query this way).
 */
export const activeDeviceCountOf = repo.activeDeviceCount;

export async function deleteDevice(db: Db, projectId: string, deviceId: string): Promise<void> {
  await repo.deleteDevice(db, projectId, deviceId);
}

/** Token hygiene: the provider no longer knows this address. */
export function removePushAddress(db: Db, projectId: string, provider: Provider, pushAddress: string): Promise<number> {
  return repo.deleteDeviceByAddress(db, projectId, provider, pushAddress);
}

/** Token hygiene: the provider rejects this address as malformed; keep the row, stop sending. Returns whether an active device was disabled. */
export function disableDevice(
  db: Db,
  clock: Clock,
  projectId: string,
  deviceId: string,
  reason: string,
): Promise<boolean> {
  return repo.disableDevice(db, projectId, deviceId, reason, clock.now());
}

export function deviceToResponse(device: Device) {
  const updatedAt = new Date(device.updatedAt).toISOString();
  return {
    device_id: device.deviceId,
    project_user_id: device.projectUserId,
    platform: device.platform,
    provider: device.provider,
    status: device.status,
    // A new device's two times are one instant: formatted once (a first registration is a hot path).
    created_at: device.createdAt === device.updatedAt ? updatedAt : new Date(device.createdAt).toISOString(),
    updated_at: updatedAt,
  };
}
