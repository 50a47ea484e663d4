import { changeAwareCaches } from '../db/change-aware-cache.js';

export interface VerifiedKey {
  projectId: string;
  kind: 'secret' | 'public';
  keyId: string;
}

/**
 * Keys this process verified, by digest, so the hot path skips the lookup (embedded database only,
 * src/db/change-aware-cache.ts): a key revoked by this process or by the CLI is refused from the
 * next request on, as without the cache.
 */
const verifiedKeys = changeAwareCaches<VerifiedKey>(10_000);

/** Called wherever api_keys rows are revoked, around the statement (before the change commits). */
export const keysChanged = (): void => verifiedKeys.changed();

export const keyCacheOf = (db: object) => verifiedKeys.cacheOf(db);
