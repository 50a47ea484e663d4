import { hash } from 'node:crypto';
import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import * as repo from './idempotency.repository.js';

export type { IdempotencyKeyRef } from './idempotency.repository.js';

/** Keys are kept 24 h (rules `rest-idempotency` and `a2a-idempotency`). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** An in-progress claim older than this belongs to a request that died; it may be taken over. */
const ABANDONED_AFTER_MS = 10 * 60 * 1000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface StoredResponse {
  status: number;
  body: unknown;
}

export interface IdempotentResult {
  response: StoredResponse;
  replayed: boolean;
}

/** SHA-256 of the request's JSON, in hex (one-shot `hash`: no Hash object per request). */
export function hashRequest(parts: unknown): string {
  return hash('sha256', JSON.stringify(parts));
}

export function validateIdempotencyKey(key: string): void {
  if (!KEY_PATTERN.test(key))
    throw new AppError(
      'invalid',
      'INVALID_IDEMPOTENCY_KEY',
      'Idempotency key must be 1 to 255 printable ASCII characters',
    );
}

/**
 * Runs `execute` at most once per (project, scope, key) within 24 h. A replay with the same
 * request returns the stored response; a key still in progress, or reused with a different
 * request, is a conflict. A failure (thrown error) releases the key so the caller may retry.
 */
export async function runIdempotent(
  db: Db,
  clock: Clock,
  ref: repo.IdempotencyKeyRef,
  requestHash: string,
  execute: () => Promise<StoredResponse>,
): Promise<IdempotentResult> {
  validateIdempotencyKey(ref.key);
  for (let attempt = 0; attempt < 3; attempt++) {
    const now = clock.now();
    if (await repo.claimKey(db, ref, requestHash, now, now + IDEMPOTENCY_TTL_MS)) {
      let response: StoredResponse;
      try {
        response = await execute();
      } catch (error) {
        await repo.releaseKey(db, ref, now);
        throw error;
      }
      await repo.completeKey(db, ref, response.status, JSON.stringify(response.body));
      return { response, replayed: false };
    }
    const existing = await repo.findKey(db, ref);
    if (!existing) continue; // released or expired between our two statements
    const createdAt = Number(existing.created_at);
    const abandoned = existing.state === 'in_progress' && now - createdAt > ABANDONED_AFTER_MS;
    if (Number(existing.expires_at) <= now || abandoned) {
      await repo.releaseKey(db, ref, createdAt);
      continue;
    }
    if (existing.request_hash !== requestHash) {
      throw new AppError(
        'conflict',
        'IDEMPOTENCY_KEY_REUSED',
        'Idempotency key was already used with a different request',
      );
    }
    if (existing.state === 'in_progress') {
      throw new AppError(
        'conflict',
        'IDEMPOTENCY_KEY_IN_PROGRESS',
        'A request with this idempotency key is still in progress',
        { retryAfterSeconds: 1 },
      );
    }
    return {
      response: { status: existing.response_status ?? 200, body: JSON.parse(existing.response_body ?? 'null') },
      replayed: true,
    };
  }
  throw new AppError('conflict', 'IDEMPOTENCY_KEY_BUSY', 'Idempotency key is changing hands, retry', {
    retryAfterSeconds: 1,
  });
}

/** Removes keys past their 24 h; a replay of an expired key is treated as new anyway, this bounds the table. */
export function deleteExpiredIdempotencyKeys(db: Db, clock: Clock): Promise<number> {
  return repo.deleteExpiredKeys(db, clock.now());
}
