import type { Logger } from 'pino';
import type { BucketSpec, TokenBucketStore } from '../rate-limit/token-buckets.js';
import { sleep } from './retry-policy.js';

/** Tokens fetched from the shared store per round trip, at most. */
const MAX_BATCH = 100;
/** Tokens held locally longer than this are dropped, so a late burst never exceeds the bucket. */
const RESERVOIR_TTL_MS = 1000;

interface Waiter {
  deadline: number;
  resolve(granted: boolean): void;
}

interface Gate {
  tokens: number;
  tokensAt: number;
  holdUntil: number;
  waiters: Waiter[];
  pumping: boolean;
}

/**
 * Provider quotas (one bucket per FCM project, one per APNs topic) on the shared token-bucket store,
 * so every Herald instance draws from the same bucket. Sends wait for a token (up to their
 * deadline) instead of exceeding the quota. Tokens are fetched in batches for all waiting sends of
 * a key, so a busy key costs one store round trip per batch, not per message.
 */
export class ProviderQuota {
  private readonly gates = new Map<string, Gate>();

  private readonly store: TokenBucketStore;
  private readonly now: () => number;
  private readonly logger: Logger | undefined;
  constructor(store: TokenBucketStore, now: () => number, logger?: Logger) {
    this.store = store;
    this.now = now;
    this.logger = logger;
  }

  /** Takes a token held locally, if there is one and nobody is waiting (no promise on the fast path). */
  tryAcquire(key: string): boolean {
    const gate = this.gate(key);
    const now = this.now();
    if (gate.waiters.length > 0 || now < gate.holdUntil || this.reservoir(gate, now) < 1) return false;
    gate.tokens--;
    return true;
  }

  /** Resolves `true` once a token of `key` is ours, `false` if `deadline` comes first. */
  acquire(key: string, spec: BucketSpec, deadline: number): Promise<boolean> {
    if (this.tryAcquire(key)) return Promise.resolve(true);
    const gate = this.gate(key);
    return new Promise((resolve) => {
      gate.waiters.push({ deadline, resolve });
      void this.pump(key, gate, spec);
    });
  }

  /** The provider answered 429: no send on `key` until `until` (a slowdown for everyone, not one send). */
  hold(key: string, until: number): void {
    const gate = this.gate(key);
    gate.holdUntil = Math.max(gate.holdUntil, until);
  }

  private gate(key: string): Gate {
    let gate = this.gates.get(key);
    if (!gate) {
      gate = { tokens: 0, tokensAt: 0, holdUntil: 0, waiters: [], pumping: false };
      this.gates.set(key, gate);
    }
    return gate;
  }

  private reservoir(gate: Gate, now: number): number {
    if (now - gate.tokensAt > RESERVOIR_TTL_MS) gate.tokens = 0;
    return gate.tokens;
  }

  private async pump(key: string, gate: Gate, spec: BucketSpec): Promise<void> {
    if (gate.pumping) return;
    gate.pumping = true;
    try {
      while (gate.waiters.length > 0) {
        let now = this.now();
        gate.waiters = gate.waiters.filter((w) => (w.deadline > now ? true : (w.resolve(false), false)));
        if (gate.waiters.length === 0) break;
        const earliest = Math.min(...gate.waiters.slice(0, 50).map((w) => w.deadline));
        if (now < gate.holdUntil) {
          await sleep(Math.min(gate.holdUntil, earliest) - now);
          continue;
        }
        while (gate.waiters.length > 0 && this.reservoir(gate, now) >= 1) {
          gate.tokens--;
          gate.waiters.shift()!.resolve(true);
        }
        if (gate.waiters.length === 0) break;
        const want = Math.max(1, Math.min(gate.waiters.length, Math.floor(spec.capacity), MAX_BATCH));
        const granted = await this.take(key, spec, want);
        now = this.now();
        if (granted > 0) {
          gate.tokens = this.reservoir(gate, now) + granted;
          gate.tokensAt = now;
          continue;
        }
        await sleep(Math.max(1, Math.min(Math.ceil(1000 / spec.refillPerSecond), earliest - now)));
      }
    } finally {
      gate.pumping = false;
    }
  }

  /** Takes up to `want` tokens; what the bucket still has when it cannot give them all. */
  private async take(key: string, spec: BucketSpec, want: number): Promise<number> {
    try {
      const result = await this.store.take(key, spec, want);
      if (result.allowed) return want;
      if (result.remaining >= 1) {
        const partial = Math.min(want, result.remaining);
        if ((await this.store.take(key, spec, partial)).allowed) return partial;
      }
      return 0;
    } catch (error) {
      // The shared store is down: send anyway; the provider's own 429s still slow us down.
      this.logger?.warn({ err: error, key }, 'provider quota store unavailable; sending without it');
      return want;
    }
  }
}
