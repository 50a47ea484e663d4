import { readJson, writeJson } from '../db/json.js';
import { AppError } from '../errors.js';
import type * as repo from './devices.repository.js';
import type { RegisterDeviceBody } from './devices.schemas.js';
import type { DeviceUpsert } from './registration.repository.js';

/* A device as Herald answers it, and the row a registration writes: pure functions, no database. */

export type Provider = 'fcm' | 'apns' | 'webpush';

export interface Device {
  deviceId: string;
  projectUserId: string;
  userId: string;
  platform: 'android' | 'ios' | 'web';
  provider: Provider;
  pushAddress: string;
  webPushKeys: { p256dh: string; auth: string } | null;
  status: 'active' | 'disabled';
  disabledReason: string | null;
  createdAt: number;
  updatedAt: number;
}

export function deviceRowToDevice(row: repo.DeviceRow): Device {
  return {
    deviceId: row.device_id,
    projectUserId: row.project_user_id,
    userId: row.user_id,
    platform: row.platform,
    provider: row.provider,
    pushAddress: row.push_address,
    webPushKeys: row.push_keys === null ? null : readJson(row.push_keys),
    status: row.status,
    disabledReason: row.disabled_reason,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

function pushAddressOf(input: RegisterDeviceBody): { provider: Provider; address: string; keys: string | null } {
  const given = [input.fcm_token, input.apns_token, input.web_push_subscription].filter((v) => v !== undefined);
  if (given.length !== 1) {
    throw new AppError(
      'invalid',
      'INVALID_PUSH_ADDRESS',
      'Give exactly one of fcm_token, apns_token or web_push_subscription',
    );
  }
  if (input.apns_token !== undefined) {
    if (input.platform !== 'ios') throw new AppError('invalid', 'INVALID_PLATFORM', 'apns_token requires platform ios');
    return { provider: 'apns', address: input.apns_token.toLowerCase(), keys: null };
  }
  if (input.web_push_subscription !== undefined) {
    if (input.platform !== 'web')
      throw new AppError('invalid', 'INVALID_PLATFORM', 'web_push_subscription requires platform web');
    return {
      provider: 'webpush',
      address: input.web_push_subscription.endpoint,
      keys: writeJson(input.web_push_subscription.keys),
    };
  }
  return { provider: 'fcm', address: input.fcm_token!, keys: null };
}

/** The device row a registration writes, but its user: new (created now), active at the input's push address. */
export function newDeviceRow(projectId: string, input: RegisterDeviceBody & { device_id: string }, now: number) {
  const { provider, address, keys } = pushAddressOf(input);
  return {
    project_id: projectId,
    device_id: input.device_id,
    platform: input.platform,
    provider,
    push_address: address,
    push_keys: keys,
    created_at: now,
    updated_at: now,
  };
}

/** The device as registered, built from what was written (no row read back); the keys are still parsed, as from a stored row. */
export function registeredDevice(
  input: RegisterDeviceBody & { device_id: string },
  userId: string,
  row: Pick<DeviceUpsert, 'provider' | 'push_address' | 'push_keys' | 'created_at' | 'updated_at'>,
): Device {
  return {
    deviceId: input.device_id,
    projectUserId: input.project_user_id,
    userId,
    platform: input.platform,
    provider: row.provider,
    pushAddress: row.push_address,
    webPushKeys: row.push_keys === null ? null : readJson(row.push_keys),
    status: 'active',
    disabledReason: null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
