import { AppError } from '../errors.js';

/** Opaque keyset cursors: the last row's sort key, as base64url JSON. */
export function encodeCursor(key: Array<string | number>): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/** A cursor's key: its first part a number (a time) or a string (a time-ordered id), then a row id. */
export function decodeCursor(
  cursor: string | undefined,
  first: 'number' | 'string' = 'number',
): Array<string | number> | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  try {
    const key: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(key) && key.length === 2 && typeof key[0] === first && typeof key[1] === 'string')
      return key as Array<string | number>;
  } catch {
    // fall through
  }
  throw new AppError('invalid', 'INVALID_CURSOR', 'cursor is not one this server returned');
}

export function parseLimit(limit: string | number | undefined, fallback = 50, max = 100): number {
  const value = limit === undefined ? fallback : Number(limit);
  if (!Number.isInteger(value) || value < 1 || value > max)
    throw new AppError('invalid', 'INVALID_LIMIT', `limit must be an integer from 1 to ${max}`);
  return value;
}
