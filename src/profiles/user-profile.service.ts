import type { Db } from '../db/database.js';
import { devicesOfUserId, deviceToResponse, type Device } from '../devices/devices.service.js';
import { AppError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { recentEventsOfUserId } from '../events/events.service.js';
import { findStoredUser, userToWire, type StoredUser } from '../users/users-read.service.js';

export const RECENT_EVENTS = 20;

/** A user with its devices and latest events: the one read that spans users/, devices/ and events/. */
export interface UserProfile {
  user: StoredUser;
  devices: Device[];
  recentEvents: Awaited<ReturnType<typeof recentEventsOfUserId>>;
}

/** A user with its devices (without push addresses or keys) and its latest events. */
export async function getUserProfile(
  db: Db,
  clock: Clock,
  projectId: string,
  projectUserId: string,
): Promise<UserProfile> {
  const user = await findStoredUser(db, projectId, projectUserId);
  if (!user) throw new AppError('not_found', 'USER_NOT_FOUND', `User ${projectUserId} does not exist`);
  const [devices, recentEvents] = await Promise.all([
    devicesOfUserId(db, projectId, user.id),
    recentEventsOfUserId(db, clock, projectId, user.id, RECENT_EVENTS),
  ]);
  return { user, devices, recentEvents };
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** Devices as `GET /users/{id}/devices` shows them (never a push address or keys), with why one was disabled. */
export function userProfileToWire(d: UserProfile) {
  return {
    ...userToWire(d.user),
    devices: d.devices.map((v) => ({ ...deviceToResponse(v), disabled_reason: v.disabledReason })),
    recent_events: d.recentEvents.map((e) => ({
      event_id: e.id,
      name: e.name,
      properties: e.properties,
      timestamp: iso(e.timestamp),
    })),
  };
}
