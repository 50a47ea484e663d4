import { LRUCache } from 'lru-cache';
import { dataVersionOf } from './data-version.js';

/**
 * Values this process read from the embedded database, kept until the rows behind them may have
 * changed. A change is either this process's own (`changed()`, called around the statement that
 * changes the rows, before it commits) or another connection's commit (the CLI), which moves
 * `PRAGMA data_version`; either empties the cache before the next read. A value read while such a
 * change happened is not kept (the stamp taken before the read no longer matches). On PostgreSQL
 * other instances change rows unseen, so nothing is cached there.
 */
export interface ChangeAwareCache<V> {
  /** The stamp to pass to `set`; take it before the read whose result is to be kept. */
  stamp(): string;
  /** The kept value (which may be `null`), or `undefined` when none is kept. */
  get(key: string): V | undefined;
  set(key: string, value: V, stamp: string | undefined): void;
}

export interface ChangeAwareCaches<V> {
  /** Empties every cache of this kind before its next read. */
  changed(): void;
  /** The cache of a database handle (made on first use), or undefined when it cannot have one. */
  cacheOf(db: object): ChangeAwareCache<V> | undefined;
  /** The value kept for `key` in `db`'s cache, else `read()`'s, kept when nothing changed meanwhile. */
  through(db: object, key: string, read: () => Promise<V>): Promise<V>;
}

/** One kind of cache (verified keys, identity settings), each database handle with its own. */
export function changeAwareCaches<V>(maxEntries: number): ChangeAwareCaches<V> {
  let revision = 0;
  const caches = new WeakMap<object, ChangeAwareCache<V> | null>();

  function create(dataVersion: () => number): ChangeAwareCache<V> {
    // Boxed: lru-cache keeps no null or undefined values, and `null` is a value here ("known absent").
    const entries = new LRUCache<string, { value: V }>({ max: maxEntries });
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
      get(key) {
        check();
        return entries.get(key)?.value;
      },
      set(key, value, stamp) {
        if (stamp === undefined || check() !== stamp) return;
        entries.set(key, { value });
      },
    };
  }

  const cacheOf = (db: object): ChangeAwareCache<V> | undefined => {
    let cache = caches.get(db);
    if (cache === undefined) {
      const dataVersion = dataVersionOf(db);
      cache = dataVersion ? create(dataVersion) : null;
      caches.set(db, cache);
    }
    return cache ?? undefined;
  };
  return {
    changed() {
      revision++;
    },
    cacheOf,
    async through(db, key, read) {
      const cache = cacheOf(db);
      const cached = cache?.get(key);
      if (cached !== undefined) return cached;
      const stamp = cache?.stamp();
      const value = await read();
      cache?.set(key, value, stamp);
      return value;
    },
  };
}
