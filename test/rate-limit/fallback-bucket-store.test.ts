import { describe, expect, it } from 'vitest';
import { withLocalFallback } from '../../src/rate-limit/fallback-bucket-store.js';
import { createMemoryBucketStore, type TokenBucketStore } from '../../src/rate-limit/token-buckets.js';
import { manualClock } from '../helpers/clock.js';

const spec = { capacity: 2, refillPerSecond: 0.001 };

/** A shared store that can be switched down; counts the takes it was asked for. */
function flakyStore() {
  const inner = createMemoryBucketStore(() => 0);
  const state = { down: false, calls: 0 };
  const store: TokenBucketStore = {
    async take(key, s, cost) {
      state.calls++;
      if (state.down) throw new Error('connection refused');
      return inner.take(key, s, cost);
    },
    close: async () => {},
  };
  return { store, state };
}

describe('local fallback of a shared bucket store', () => {
  it('serves takes from local buckets during an outage, probes every 5 s, and switches back', async () => {
    const clock = manualClock();
    const { store, state } = flakyStore();
    const events: string[] = [];
    const resilient = withLocalFallback(store, {
      now: clock.now,
      onFailure: () => events.push('down'),
      onRecovery: () => events.push('up'),
    });

    expect((await resilient.take('k', spec)).remaining).toBe(1);
    state.down = true;
    // The failing take and the next ones are answered locally, with the limits still enforced.
    const local = [await resilient.take('k', spec), await resilient.take('k', spec), await resilient.take('k', spec)];
    expect(local.map((r) => r.allowed)).toEqual([true, true, false]);
    expect(state.calls).toBe(2);

    clock.advance(5000);
    await resilient.take('k', spec);
    expect(state.calls).toBe(3);
    expect(events).toEqual(['down']);

    state.down = false;
    clock.advance(5000);
    // Answered by the shared bucket again (one token left there; the local one is empty).
    expect(await resilient.take('k', spec)).toMatchObject({ allowed: true, remaining: 0 });
    expect(state.calls).toBe(4);
    expect((await resilient.take('k', spec)).allowed).toBe(false);
    expect(state.calls).toBe(5);
    expect(events).toEqual(['down', 'up']);
  });

  it('sends a single probe while concurrent takes stay local', async () => {
    const clock = manualClock();
    const { store, state } = flakyStore();
    const resilient = withLocalFallback(store, { now: clock.now });
    state.down = true;
    await resilient.take('k', spec);
    clock.advance(5000);
    await Promise.all([resilient.take('k', spec), resilient.take('k', spec), resilient.take('k', spec)]);
    expect(state.calls).toBe(2);
  });
});
