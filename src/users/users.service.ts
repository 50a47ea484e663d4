import type { Db } from '../db/database.js';
import { writeJson } from '../db/json.js';
import { AppError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { newTimeOrderedId } from '../lib/ids.js';
import * as repo from './users.repository.js';
import type { UserUpsertRow, UserUpserts } from './user-upserts.js';
import { upsertUsersMergingFromArrays, userMatch } from './users-merging.repository.js';
import {
  isValidProjectUserId,
  MAX_PROPERTIES,
  MAX_PROPERTY_KEY_LENGTH,
  MAX_PROPERTY_VALUE_BYTES,
  STORABLE_TEXT_PATTERN,
  withinCodePoints,
  type Properties,
} from './users.schemas.js';

export type { EnsureParams, UserRecord } from './users.repository.js';

const tooManyProperties = (): AppError =>
  new AppError('invalid', 'TOO_MANY_PROPERTIES', `A user may hold at most ${MAX_PROPERTIES} properties`);

const storableText = new RegExp(STORABLE_TEXT_PATTERN, 'u');

/** Rule `user-id`, for every caller that may create a user. */
export function assertValidProjectUserId(projectUserId: unknown): asserts projectUserId is string {
  if (!isValidProjectUserId(projectUserId))
    throw new AppError(
      'invalid',
      'INVALID_PROJECT_USER_ID',
      'project_user_id must be 1 to 255 characters without control characters',
    );
}

/**
 * Rule `user-properties` for every caller (REST schemas check most of it first; other transports rely on this): a flat
 * object of at most 256 keys of 1 to 128 characters, values string (at most 8 KiB of UTF-8),
 * finite number, boolean or null, and no text a database would refuse or alter.
 */
export function assertValidProperties(properties: unknown): asserts properties is Properties {
  const fail = (code: string, message: string): never => {
    throw new AppError('invalid', code, message);
  };
  if (typeof properties !== 'object' || properties === null || Array.isArray(properties))
    fail('INVALID_PROPERTIES', 'properties must be an object');
  const entries = Object.entries(properties as object);
  if (entries.length > MAX_PROPERTIES) throw tooManyProperties();
  for (const [key, value] of entries) {
    if (key.length === 0 || !withinCodePoints(key, MAX_PROPERTY_KEY_LENGTH) || !storableText.test(key)) {
      fail('INVALID_PROPERTY_KEY', `Property keys must be 1 to ${MAX_PROPERTY_KEY_LENGTH} characters of text`);
    }
    if (typeof value === 'string') {
      if (Buffer.byteLength(value, 'utf8') > MAX_PROPERTY_VALUE_BYTES)
        fail('PROPERTY_VALUE_TOO_LONG', `Property ${key} is longer than ${MAX_PROPERTY_VALUE_BYTES} bytes`);
      if (!storableText.test(value))
        fail('INVALID_PROPERTY_VALUE', `Property ${key} holds a NUL character or an unpaired surrogate`);
    } else if (!(
      value === null ||
      typeof value === 'boolean' ||
      (typeof value === 'number' && Number.isFinite(value))
    )) {
      fail('INVALID_PROPERTY_VALUE', `Property ${key} must be a string, a finite number, a boolean or null`);
    }
  }
}

/** The checked arguments of a create-or-merge: rules `user-id` and `user-properties`, then the row to propose. */
function upsertArguments(clock: Clock, projectId: string, projectUserId: string, properties: Properties) {
  assertValidProjectUserId(projectUserId);
  assertValidProperties(properties);
  return { id: newTimeOrderedId(), projectId, projectUserId, propertiesJson: writeJson(properties), now: clock.now() };
}

/**
 * Creates the user, or merges `properties` into an existing one (rule `create-merges`), atomically in the database.
 * Returns every stored property.
 */
export function upsertUser(
  db: Db,
  clock: Clock,
  projectId: string,
  projectUserId: string,
  properties: Properties = {},
): Promise<repo.UserRecord> {
  const onDb: UserUpserts = { upsert: (row) => repo.upsertUserMerging(db, row, MAX_PROPERTIES) };
  return upsertUserThrough(onDb, clock, projectId, projectUserId, properties);
}

/** `upsertUser` through `upserts`, which may share its statement with concurrent ones (user-upserts.ts). */
export async function upsertUserThrough(
  upserts: UserUpserts,
  clock: Clock,
  projectId: string,
  projectUserId: string,
  properties: Properties = {},
): Promise<repo.UserRecord> {
  const user = await upserts.upsert(upsertArguments(clock, projectId, projectUserId, properties));
  if (!user) throw tooManyProperties();
  return user;
}

/**
 * `upsertUser` as a statement not yet run (checked as `upsertUser` checks), as an A2A `SkillWrite` takes
 * it: the builder, one function for every call, and this call's values. The statement returns the user
 * as `userId`, `projectUserId` and `properties`, or no row when the merge would pass the key limit; `keys`
 * names the one user row it changes, and `many` writes many calls' users in one statement.
 */
export function upsertUserStatement(
  clock: Clock,
  projectId: string,
  projectUserId: string,
  properties: Properties = {},
) {
  return {
    build: buildUpsertUserStatement,
    params: upsertArguments(clock, projectId, projectUserId, properties),
    keys: [`user\n${projectId}\n${projectUserId}`],
    many: { build: buildUpsertUsersStatement, match: userMatch(projectId, projectUserId) },
  };
}

const buildUpsertUsersStatement = (db: Db, params: Record<string, unknown>[]) =>
  upsertUsersMergingFromArrays(db, params as unknown as UserUpsertRow[]);

const buildUpsertUserStatement = (db: Db, params: Record<string, unknown>) =>
  repo.upsertUserMergingStatement(db, params as ReturnType<typeof upsertArguments>, MAX_PROPERTIES);

/** Merges `properties` into an existing user (PATCH); returns only the supplied keys (rule `patch-response`). */
export async function patchUser(
  db: Db,
  clock: Clock,
  projectId: string,
  projectUserId: string,
  properties: Properties = {},
): Promise<Properties> {
  assertValidProperties(properties);
  const updated = await repo.mergeUserProperties(
    db,
    { projectId, projectUserId },
    writeJson(properties),
    clock.now(),
    MAX_PROPERTIES,
  );
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
export const existingProjectUserIds = repo.existingProjectUserIds;

/** Internal ids of the given users, creating those that do not exist yet (rules `devices` and `events`). */
export function ensureUsers(
  db: Db,
  clock: Clock,
  projectId: string,
  projectUserIds: string[],
): Promise<Map<string, string>> {
  projectUserIds.forEach(assertValidProjectUserId);
  return repo.ensureUsers(db, projectId, projectUserIds, newTimeOrderedId, clock.now());
}

/** The internal id of one user, creating it if it does not exist yet (device registration, rule `devices`). */
export function ensureUser(db: Db, clock: Clock, projectId: string, projectUserId: string): Promise<string> {
  assertValidProjectUserId(projectUserId);
  return repo.ensureUser(db, projectId, projectUserId, newTimeOrderedId, clock.now());
}

/**
 * What `withEnsuredUser` needs to ensure one user in a statement: the checked id, and the internal id and
 * time a new row would get.
 */
export function ensuredUserParams(clock: Clock, projectId: string, projectUserId: string): repo.EnsureParams {
  assertValidProjectUserId(projectUserId);
  return { id: newTimeOrderedId(), projectId, projectUserId, now: clock.now() };
}

/** `ensureUser` as the start of one statement: the CTE `ensured_user` holds the user's id. */
export const withEnsuredUser = repo.withEnsuredUser;
