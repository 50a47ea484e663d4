/** What a shared statement answers for an item it could not settle: run that item again on its own. */
export const RUN_ALONE: unique symbol = Symbol('run alone');

/** One kind of write that concurrent requests may share a statement for. */
export interface SharedWork<Item, Result> {
  /** Statements of this kind running at once at most (see `stalledAfterMs` for all but the first). */
  maxInFlight: number;
  /**
   * A statement starts beside others of its kind only once each of them has run this long (default
   * `STALLED_AFTER_MS`): the extra slots are for statements held up (a row lock, a slow commit), not
   * for a second statement that would have shared the next one.
   */
  stalledAfterMs?: number;
  /** Items of one statement at most; a statement takes a power of two of them, so a `VALUES` list compiles once per count. */
  maxItems: number;
  /** Items with a key in common never share a statement (one statement cannot update a row twice). */
  keysOf(item: Item): readonly string[];
  /** The item's write on its own, as it runs with nothing else in flight. */
  alone(item: Item): Promise<Result>;
  /** The items' writes in one statement, each item's result in its place; written whole or not at all. */
  together(items: Item[]): Promise<Array<Result | typeof RUN_ALONE>>;
  /** Whether a shared statement's failure is one its items may meet on their own (then nothing is logged). */
  isExpected(error: unknown): boolean;
  /** Hears any other failure: a shared path broken that way would otherwise show only as slower requests. */
  unexpected(error: unknown): void;
}

interface Waiter<Item, Result> {
  item: Item;
  keys: readonly string[];
  resolve(result: Result): void;
  reject(error: unknown): void;
}

/** How long a statement runs before another of its kind may start beside it (docs/decisions.md, Storage). */
export const STALLED_AFTER_MS = 20;

/**
 * Writes that share statements under load, where each statement costs a round trip and a commit
 * (PostgreSQL): an item that arrives while none of its kind runs goes at once, alone; the ones that
 * arrive while one runs wait for it to finish and go together in the next. Only a statement that has
 * run `stalledAfterMs` lets another start beside it, up to `maxInFlight`, so a statement held up on a
 * hot row delays the others by that much at most. Idle, none waits. When a shared statement fails,
 * each of its items runs again alone, so each request gets the outcome it would have had alone.
 */
export function sharedStatements<Item, Result>(work: SharedWork<Item, Result>): (item: Item) => Promise<Result> {
  const queue: Waiter<Item, Result>[] = [];
  // A statement's pick looks this far into the queue, so a hot key's thousands of waiters cost each
  // statement a bounded scan, not a pass over all of them; the native splice only moves pointers.
  const scanWindow = work.maxItems * 4;
  const stalledAfterMs = work.stalledAfterMs ?? STALLED_AFTER_MS;
  let inFlight = 0;
  /** Statements in flight that have run `stalledAfterMs` or longer. */
  let stalled = 0;

  async function runAlone(waiter: Waiter<Item, Result>): Promise<void> {
    try {
      waiter.resolve(await work.alone(waiter.item));
    } catch (error) {
      waiter.reject(error);
    }
  }

  async function runTogether(waiters: Waiter<Item, Result>[]): Promise<void> {
    let results: Array<Result | typeof RUN_ALONE>;
    try {
      results = await work.together(waiters.map((waiter) => waiter.item));
    } catch (error) {
      if (!work.isExpected(error)) work.unexpected(error);
      // Nothing of the statement was written: each item again on its own, for its own outcome.
      await Promise.all(waiters.map(runAlone));
      return;
    }
    const again: Promise<void>[] = [];
    waiters.forEach((waiter, i) => {
      const result = results[i]!;
      if (result === RUN_ALONE) again.push(runAlone(waiter));
      else waiter.resolve(result);
    });
    await Promise.all(again);
  }

  /** The next statement's waiters: a power of two of them, no key shared, in arrival order; taken out of the queue. */
  function takeNext(): Waiter<Item, Result>[] {
    const keys = new Set<string>();
    const picked: number[] = [];
    const scanned = Math.min(queue.length, scanWindow);
    for (let i = 0; i < scanned && picked.length < work.maxItems; i++) {
      const waiterKeys = queue[i]!.keys;
      if (waiterKeys.some((key) => keys.has(key))) continue;
      for (const key of waiterKeys) keys.add(key);
      picked.push(i);
    }
    const taken = new Set(picked.slice(0, 2 ** Math.floor(Math.log2(picked.length))));
    const next: Waiter<Item, Result>[] = [];
    const kept: Waiter<Item, Result>[] = [];
    for (let i = 0; i < scanned; i++) (taken.has(i) ? next : kept).push(queue[i]!);
    queue.splice(0, scanned, ...kept);
    return next;
  }

  const mayStart = (): boolean => inFlight === 0 || (inFlight < work.maxInFlight && stalled === inFlight);

  function sendWaiting(): void {
    while (queue.length > 0 && mayStart()) {
      const waiters = takeNext();
      inFlight++;
      let isStalled = false;
      const watch =
        work.maxInFlight > 1
          ? setTimeout(() => {
              isStalled = true;
              stalled++;
              sendWaiting();
            }, stalledAfterMs)
          : undefined;
      void (waiters.length === 1 ? runAlone(waiters[0]!) : runTogether(waiters)).finally(() => {
        clearTimeout(watch);
        inFlight--;
        if (isStalled) stalled--;
        sendWaiting();
      });
    }
  }

  return (item) =>
    new Promise((resolve, reject) => {
      queue.push({ item, keys: work.keysOf(item), resolve, reject });
      sendWaiting();
    });
}

/**
 * Shared statements in flight at most for a query pool of `poolSize`: a quarter of it, at least 2 (so
 * one statement waiting on a hot row does not hold every write of its kind back for longer than
 * `STALLED_AFTER_MS`) and at most the pool (docs/decisions.md, Storage).
 */
export const sharedStatementsInFlight = (poolSize: number): number =>
  Math.min(poolSize, Math.max(2, Math.floor(poolSize / 4)));
