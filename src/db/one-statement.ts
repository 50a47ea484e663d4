import { AppError } from '../errors.js';
import type { Db } from './database.js';
import { classifyDatabaseError } from './database-errors.js';
import type { WriteCommitter } from './group-commit.js';

/**
 * A failure a one-statement write leaves to its transaction without a word: input a feature refused,
 * an integrity constraint (SQLSTATE class 23: a key another request took or holds, a user inserted
 * meanwhile), or a database that is out or lost a race.
 */
export function isExpectedFallback(error: unknown): boolean {
  if (error instanceof AppError) return true;
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code === 'string' && code.startsWith('23')) return true;
  return classifyDatabaseError(error) !== undefined;
}

/**
 * Tries a write as one statement before the caller's transaction (where the dialect
 * `supportsWritesInWith`): `undefined`, with nothing written, when the statement failed, so the caller
 * runs its transaction, which reaches the same outcome. Any failure not expected there goes to
 * `unexpected` (a log line), since a fast path broken that way would otherwise show only as slower requests.
 */
export async function tryOneStatement<T>(
  writes: WriteCommitter,
  work: (db: Db) => Promise<T>,
  unexpected: (error: unknown) => void,
): Promise<T | undefined> {
  try {
    return await writes.runStatement(work);
  } catch (error) {
    if (!isExpectedFallback(error)) unexpected(error);
    return undefined;
  }
}
