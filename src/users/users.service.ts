import type { Db } from '../db/database.js';
import { writeJson } from '../db/json.js';
import { AppError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import * as repo from './users.repository.js';
import { MAX_PROPERTIES, type Properties } from './users.schemas.js';

export type { UserRecord } from './users.repository.js';

const tooManyProperties = (): AppError =>
  new AppError('invalid', 'TOO_MANY_PROPERTIES', `A user may hold at most ${MAX_PROPERTIES} properties`);

/**
 * Creates the user, or merges `properties` into an existing one (R5), atomically in the database.
 * Returns every stored property.
 */
export async function upsertUser(db: Db, clock: Clock, projectId: string, projectUserId: string, properties: Properties = {}): Promise<repo.UserRecord> {
  const user = await repo.upsertUserMerging(
    db,
    { id: newId(), projectId, projectUserId, propertiesJson: writeJson(properties), now: clock.now() },
    MAX_PROPERTIES,
  );
  if (!user) throw tooManyProperties();
  return user;
}

/** Merges `properties` into an existing user (PATCH); returns only the supplied keys (R6). */
export async function patchUser(db: Db, clock: Clock, projectId: string, projectUserId: string, properties: Properties = {}): Promise<Properties> {
  const updated = await repo.mergeUserProperties(db, { projectId, projectUserId }, writeJson(properties), clock.now(), MAX_PROPERTIES);
  if (updated) return properties;
  if (await repo.findUser(db, projectId, projectUserId)) throw tooManyProperties();
  throw new AppError('not_found', 'USER_NOT_FOUND', `User ${projectUserId} does not exist`);
}

/** Permanent delete; devices and events go too. Deleting an absent user is not an error. */
export async function deleteUser(db: Db, projectId: string, projectUserId: string): Promise<void> {
  await repo.deleteUser(db, projectId, projectUserId);
}

export async function getUser(db: Db, projectId: string, projectUserId: string): Promise<repo.UserRecord> {
  const user = await repo.findUser(db, projectId, projectUserId);
  if (!user) throw new AppError('not_found', 'USER_NOT_FOUND', `User ${projectUserId} does not exist`);
  return user;
}

export const findUser = repo.findUser;

/** Internal ids of the given users, creating those that do not exist yet (devices and events, R8, R9). */
export function ensureUsers(db: Db, clock: Clock, projectId: string, projectUserIds: string[]): Promise<Map<string, string>> {
  return repo.ensureUsers(db, projectId, projectUserIds, newId, clock.now());
}
