import { LRUCache } from 'lru-cache';
import { dataVersionOf } from '../db/data-version.js';

/**
 * Projects' identity-verification settings as this process last read them, so a public-key
 * registration or event does not read the setting on every request. Only on the embedded database,
 * as for verified keys (src/projects/key-cache.ts): a change there is either this process's own
 * (`identitySettingsChanged`, called by the statements that change a setting) or another
 * connection's commit (the CLI), which changes `PRAGMA data_version`; either empties the cache
 * before the next request, so a setting turned on applies from the next request on, as without the
 * cache. A result read while such a change happened is not kept. On PostgreSQL (other instances
 * change settings unseen) nothing is cached.
 */
export interface IdentitySettingCache<Setting> {
  /** The stamp to pass to `set`; read it before the lookup. */
  stamp(): string;
  /** The cached setting (`null`: known to be off), or `undefined` when not cached. */
  get(projectId: string): Setting | null | undefined;
  set(projectId: string, setting: Setting | null, stamp: string): void;
}

const MAX_ENTRIES = 10_000;

let revision = 0;

/** Called wherever a setting is saved or deleted, around the statement (before the change commits). */
export function identitySettingsChanged(): void {
  revision++;
}

const caches = new WeakMap<object, IdentitySettingCache<unknown> | null>();

/**
 * The cache of a database handle (made on first use), or undefined when it cannot have one. Generic
 * over the setting's row type so this module needs nothing of the repository that uses it.
 */
export function identityCacheOf<Setting>(db: object): IdentitySettingCache<Setting> | undefined {
  let cache = caches.get(db);
  if (cache === undefined) {
    const dataVersion = dataVersionOf(db);
    cache = dataVersion ? createCache(dataVersion) : null;
    caches.set(db, cache);
  }
  return (cache ?? undefined) as IdentitySettingCache<Setting> | undefined;
}

function createCache(dataVersion: () => number): IdentitySettingCache<unknown> {
  // `null` (setting off) is a value here; lru-cache refuses null, so it is kept boxed.
  const entries = new LRUCache<string, { setting: unknown }>({ max: MAX_ENTRIES });
  let validFor = '';
  const check = (): string => {
    const now = `${revision}:${dataVersion()}`;
    if (now !== validFor) {
      entries.clear();
      validFor = now;
    }
    return now;
  };
  return {
    stamp: check,
    get(projectId) {
      check();
      return entries.get(projectId)?.setting;
    },
    set(projectId, setting, stamp) {
      if (check() !== stamp) return;
      entries.set(projectId, { setting });
    },
  };
}
