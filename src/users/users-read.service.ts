import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import { compileCondition } from '../conditions/compile-condition.js';
import { validateCondition } from '../conditions/validate-condition.js';
import { encodeCursor, parseLimit } from '../lib/pagination.js';
import type { Clock } from '../lib/clock.js';
import * as repo from './users-read.repository.js';

export type { StoredUser } from './users-read.repository.js';

export const MAX_LIST_LIMIT = 1000;

/** A user's stored properties and timestamps, or undefined (the user profile reads it with devices and events). */
export const findStoredUser = repo.findStoredUser;

export interface ListUsersQuery {
  limit?: string | number | undefined;
  cursor?: string | undefined;
  prefix?: string | undefined;
  /** A condition (rule `condition-language`, segment form) as JSON text, or already parsed (the CLI). */
  filter?: unknown;
}

/** The filter as a SQL condition over `users`: the campaign condition language, validated and compiled as a segment. */
export function compileUserFilter(db: Db, clock: Clock, filter: unknown) {
  if (filter === undefined || filter === '') return compileCondition(db, null, { now: clock.now() });
  return compileCondition(db, validateUserFilter(filter), { now: clock.now() });
}

/** A filter (JSON text or a parsed condition) checked against the campaign segment language; throws a 400 error. */
export function validateUserFilter(filter: unknown) {
  let parsed: unknown = filter;
  if (typeof filter === 'string') {
    try {
      parsed = JSON.parse(filter) as unknown;
    } catch {
      throw new AppError(
        'invalid',
        'INVALID_FILTER',
        'filter must be a JSON condition (the campaign segment language)',
      );
    }
  }
  return validateCondition(parsed, 'segment', 'filter');
}

/** Cursors are the last row's project_user_id, opaque to callers. */
function decodeUserCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  try {
    const key: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(key) && key.length === 1 && typeof key[0] === 'string') return key[0];
  } catch {
    // fall through
  }
  throw new AppError('invalid', 'INVALID_CURSOR', 'cursor is not one this server returned');
}

/** One page of users in project_user_id order (keyset pagination: stable under inserts). */
export async function listUsers(
  db: Db,
  clock: Clock,
  projectId: string,
  query: ListUsersQuery,
): Promise<{ users: repo.StoredUser[]; nextCursor: string | null }> {
  const limit = parseLimit(query.limit, 50, MAX_LIST_LIMIT);
  const after = decodeUserCursor(query.cursor);
  const filter = compileUserFilter(db, clock, query.filter);
  const rows = await repo.listStoredUsers(db, projectId, { limit: limit + 1, after, prefix: query.prefix, filter });
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { users: page, nextCursor: rows.length > limit && last ? encodeCursor([last.projectUserId]) : null };
}

const iso = (ms: number): string => new Date(ms).toISOString();

export function userToWire(u: repo.StoredUser) {
  return {
    project_user_id: u.projectUserId,
    properties: u.properties,
    created_at: iso(u.createdAt),
    updated_at: iso(u.updatedAt),
  };
}
