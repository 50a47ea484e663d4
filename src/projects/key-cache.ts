import { LRUCache } from 'lru-cache';
import { dataVersionOf } from '../db/data-version.js';

export interface VerifiedKey {
  projectId: string;
  kind: 'secret' | 'public';
  keyId: string;
}

const MAX_ENTRIES = 10_000;

/**
 * Keys this process verified, by digest, so the hot path skips the lookup. Only on the embedded
 * database: a revocation there is either this process's own (`keysChanged`, called by the one
 * statement that revokes) or another connection's commit (the CLI's `key revoke`), which changes
 * `PRAGMA data_version`; either empties the cache before the next request, so a revoked key is
 * refused from the next request on, as without the cache. A result read while such a change
 * happened is not kept. On PostgreSQL (other instances revoke unseen) nothing is cached.
 */
export interface KeyCache {
  /** The stamp to pass to `set` (undefined: do not cache); read it before the lookup. */
  stamp(): string | undefined;
  get(digest: string): VerifiedKey | undefined;
  set(digest: string, key: VerifiedKey, stamp: string | undefined): void;
}

let revision = 0;

/** Called wherever api_keys rows are revoked, around the statement (before the change commits). */
export function keysChanged(): void {
  revision++;
}

const caches = new WeakMap<object, KeyCache | null>();

/** The cache of a database handle (made on first use), or undefined when it cannot have one. */
export function keyCacheOf(db: object): KeyCache | undefined {
  let cache = caches.get(db);
  if (cache === undefined) {
    const dataVersion = dataVersionOf(db);
    cache = dataVersion ? createKeyCache(dataVersion) : null;
    caches.set(db, cache);
  }
  return cache ?? undefined;
}

function createKeyCache(dataVersion: () => number): KeyCache {
  const entries = new LRUCache<string, VerifiedKey>({ max: MAX_ENTRIES });
  let validFor = '';
  const current = () => `${revision}:${dataVersion()}`;
  const check = (): string => {
    const now = current();
    if (now !== validFor) {
      entries.clear();
      validFor = now;
    }
    return now;
  };
  return {
    stamp: check,
    get(digest) {
      check();
      return entries.get(digest);
    },
    set(digest, key, stamp) {
      if (stamp === undefined || check() !== stamp) return;
      entries.set(digest, key);
    },
  };
}
