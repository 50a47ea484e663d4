interface KeyState<V> {
  /** Callers waiting for the read after the one in flight. */
  next?: { promise: Promise<V>; resolve: (value: V) => void; reject: (error: unknown) => void };
}

/**
 * Shares reads of one key among concurrent callers without ever answering a caller from a read that
 * began before it asked: a caller that arrives while the key's read is in flight waits for the next
 * one, which starts when the current one ends and serves every caller that arrived meanwhile. So a
 * change committed before a caller asked is seen by it, as with a read per caller, while N concurrent
 * callers of one key cost two reads in a row instead of N at once.
 */
export function freshReads<K, V>(read: (key: K) => Promise<V>): (key: K) => Promise<V> {
  const inFlight = new Map<K, KeyState<V>>();

  const start = (key: K, state: KeyState<V>): Promise<V> => {
    const result = read(key);
    const after = () => {
      const next = state.next;
      if (!next) {
        inFlight.delete(key);
        return;
      }
      state.next = undefined;
      start(key, state).then(next.resolve, next.reject);
    };
    result.then(after, after);
    return result;
  };

  return (key) => {
    const state = inFlight.get(key);
    if (!state) {
      const fresh: KeyState<V> = {};
      inFlight.set(key, fresh);
      return start(key, fresh);
    }
    if (!state.next) {
      let resolve!: (value: V) => void;
      let reject!: (error: unknown) => void;
      const promise = new Promise<V>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      state.next = { promise, resolve, reject };
    }
    return state.next.promise;
  };
}
