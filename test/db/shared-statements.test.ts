import { describe, expect, it } from 'vitest';
import { RUN_ALONE, sharedStatements, type SharedWork } from '../../src/db/shared-statements.js';

/*
 * The sharing queue itself (src/db/shared-statements.ts), with writes that only record what they were
 * given: which items went alone, which together, and in what order.
 */

interface Item {
  id: number;
  key: string;
}

function recordingWork(overrides: Partial<SharedWork<Item, string>> = {}) {
  const statements: number[][] = [];
  const unexpected: unknown[] = [];
  const work: SharedWork<Item, string> = {
    maxInFlight: 1,
    maxItems: 8,
    keysOf: (item) => [item.key],
    alone: async (item) => {
      statements.push([item.id]);
      return `alone ${item.id}`;
    },
    together: async (items) => {
      statements.push(items.map((item) => item.id));
      return items.map((item) => `together ${item.id}`);
    },
    isExpected: () => false,
    unexpected: (error) => void unexpected.push(error),
    ...overrides,
  };
  return { run: sharedStatements(work), statements, unexpected };
}

const items = (count: number, key: (i: number) => string = (i) => `k${i}`): Item[] =>
  Array.from({ length: count }, (_, id) => ({ id, key: key(id) }));

describe('shared statements', () => {
  it('the first item goes alone; the waiting ones go in powers of two, in arrival order', async () => {
    const { run, statements } = recordingWork();
    const results = await Promise.all(items(12).map(run));
    expect(statements).toEqual([[0], [1, 2, 3, 4, 5, 6, 7, 8], [9, 10], [11]]);
    expect(results[0]).toBe('alone 0');
    expect(results[5]).toBe('together 5');
    expect(results[11]).toBe('alone 11');
  });

  it('items with a key in common never share a statement', async () => {
    const { run, statements } = recordingWork();
    await Promise.all(items(5, (i) => (i % 2 === 0 ? 'hot' : `k${i}`)).map(run));
    // 0 alone; then 1, 2 (hot) and 3 are distinct, of which a power of two go; 4 (hot) waits for 2.
    expect(statements).toEqual([[0], [1, 2], [3, 4]]);
  });

  it("a hot key's thousands of waiters each get their turn, and every other item its answer", async () => {
    const { run, statements } = recordingWork({ maxItems: 4 });
    const all = items(3000, (i) => (i < 2000 ? 'hot' : `k${i}`));
    const results = await Promise.all(all.map(run));
    expect(results).toHaveLength(3000);
    expect(new Set(statements.flat()).size).toBe(3000);
    for (const ids of statements) {
      const keys = ids.map((id) => all[id]!.key);
      expect(new Set(keys).size).toBe(keys.length);
    }
  });

  it('an item the shared statement could not settle runs again alone', async () => {
    const { run, statements } = recordingWork({
      together: async (batch) => {
        statements.push(batch.map((item) => item.id));
        return batch.map((item) => (item.id === 2 ? RUN_ALONE : `together ${item.id}`));
      },
    });
    const results = await Promise.all(items(3).map(run));
    expect(results).toEqual(['alone 0', 'together 1', 'alone 2']);
    expect(statements).toEqual([[0], [1, 2], [2]]);
  });

  it('a failed shared statement runs each item alone; an unexpected failure is reported once, an expected one not', async () => {
    for (const expected of [false, true]) {
      const { run, statements, unexpected } = recordingWork({
        together: async () => Promise.reject(new Error('shared statement failed')),
        isExpected: () => expected,
      });
      const results = await Promise.all(items(3).map(run));
      expect(results).toEqual(['alone 0', 'alone 1', 'alone 2']);
      expect(statements).toEqual([[0], [1], [2]]);
      expect(unexpected).toHaveLength(expected ? 0 : 1);
    }
  });

  it('beside a statement in flight another starts only once it has run the stall time; idle, an item goes at once', async () => {
    const held: Array<() => void> = [];
    const started: number[][] = [];
    const hold = (ids: number[]) =>
      new Promise<void>((resolve) => {
        started.push(ids);
        held.push(resolve);
      });
    const { run } = recordingWork({
      maxInFlight: 2,
      stalledAfterMs: 40,
      alone: async (item) => (await hold([item.id]), `alone ${item.id}`),
      together: async (batch) => (await hold(batch.map((item) => item.id)), batch.map((item) => `together ${item.id}`)),
    });
    const first = run({ id: 0, key: 'k0' });
    expect(started).toEqual([[0]]);
    const waiting = [1, 2].map((id) => run({ id, key: `k${id}` }));
    await new Promise((resolve) => setTimeout(resolve, 5));
    // The first has run 5 ms of its 40: the others wait for it instead of starting beside it.
    expect(started).toEqual([[0]]);
    await new Promise((resolve) => setTimeout(resolve, 80));
    // Held past the stall time: the waiting items start beside it, together, and nothing beyond the limit.
    expect(started).toEqual([[0], [1, 2]]);
    const last = run({ id: 3, key: 'k3' });
    await new Promise((resolve) => setTimeout(resolve, 80));
    // Two in flight, both stalled: the limit holds.
    expect(started).toHaveLength(2);
    held.forEach((release) => release());
    expect(await first).toBe('alone 0');
    expect(await Promise.all(waiting)).toEqual(['together 1', 'together 2']);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(started).toEqual([[0], [1, 2], [3]]);
    held.at(-1)!();
    expect(await last).toBe('alone 3');
  });

  it("an item alone that fails rejects only that item's request", async () => {
    const { run } = recordingWork({
      alone: async (item) => (item.id === 1 ? Promise.reject(new Error('no')) : `alone ${item.id}`),
      together: async () => Promise.reject(new Error('shared statement failed')),
      isExpected: () => true,
    });
    const results = await Promise.allSettled(items(3).map(run));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  });
});
