import type { Logger } from 'pino';
import { backoffMs } from '../lib/retry-delay.js';
import type { BucketSpec, TokenBucketStore } from '../rate-limit/token-buckets.js';
import { sleep } from './retry-policy.js';

/** Tokens fetched from the shared store per round trip, at most (a 500-item request waits for one). */
const MAX_TOKENS_PER_TAKE = 500;
/**
 * Tokens held locally longer than this are dropped, so a late burst never exceeds the bucket. It is
 * also the window of recent sends that a take fetches ahead for.
 */
const RESERVOIR_TTL_MS = 1000;

interface Waiter {
  deadline: number;
  /** The latest end of a provider hold this send still waits for. */
  holdLimit: number;
  resolve(granted: boolean): void;
}

/** Longest a provider's quota answer holds a key when it gives no Retry-After. */
const MAX_BACKOFF_MS = 15 * 60_000;
/** Device holds kept before expired ones are swept. */
const MAX_DEVICE_HOLDS = 10_000;

interface Gate {
  tokens: number;
  tokensAt: number;
  holdUntil: number;
  /** Quota answers in a row without a success between them: each doubles the hold. */
  strikes: number;
  waiters: Waiter[];
  pumping: boolean;
  /** Tokens spent in the window that began at `windowAt`, and in the window before it. */
  spent: number;
  spentBefore: number;
  windowAt: number;
}

/**
 * Provider quotas (one bucket per FCM project, one per APNs topic) on the shared token-bucket store,
 * so every Herald instance draws from the same bucket. Sends wait for a token (up to their
 * deadline) instead of exceeding the quota. Tokens are taken several at a time for all waiting sends of
 * a key, so a busy key costs one store round trip per take, not per message. A take also fetches ahead
 * as many as the key spent in the last window. Without it each campaign chunk of 100 sends found the
 * reservoir empty and made two takes (its first send's, then the other 99's) with a promise per
 * waiting send; a busy key now makes one take per few hundred sends, most of them on the fast path.
 * What an instance may drop unused is at most one window of its own sends.
 */
export class ProviderQuota {
  private readonly gates = new Map<string, Gate>();
  private readonly deviceHolds = new Map<string, number>();

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
    this.spend(gate, now);
    return true;
  }

  /**
   * Resolves `true` once a token of `key` is ours, `false` if `deadline` comes first; at once when
   * the key is held past the deadline or `holdLimit`, so a request never waits for what it cannot get.
   */
  acquire(key: string, spec: BucketSpec, deadline: number, holdLimit = deadline): Promise<boolean> {
    if (this.tryAcquire(key)) return Promise.resolve(true);
    const gate = this.gate(key);
    // A provider's hold that outlasts what this send may wait is answered now, not at the deadline.
    if (gate.holdUntil >= Math.min(deadline, holdLimit)) return Promise.resolve(false);
    return new Promise((resolve) => {
      gate.waiters.push({ deadline, holdLimit, resolve });
      void this.pump(key, gate, spec);
    });
  }

  /** The provider answered 429: no send on `key` until `until` (a slowdown for everyone, not one send). */
  hold(key: string, until: number): void {
    const gate = this.gate(key);
    gate.holdUntil = Math.max(gate.holdUntil, until);
  }

  /**
   * The provider said the quota of `key` (an FCM project) is exhausted: hold every send of the key
   * for its Retry-After, else `minMs` doubled per answer in a row (60 s, 120 s, ... up to 15 min),
   * Google's advice for quota errors. Returns the end of the hold.
   */
  backOff(key: string, retryAfterMs: number | undefined, minMs: number): number {
    const gate = this.gate(key);
    const now = this.now();
    // Answers to sends already in flight when the hold began belong to the same episode.
    if (now >= gate.holdUntil) gate.strikes++;
    this.hold(key, now + (retryAfterMs ?? backoffMs(gate.strikes, { baseMs: minMs, capMs: MAX_BACKOFF_MS })));
    return gate.holdUntil;
  }

  /** A send on `key` was accepted: the next quota answer starts the backoff from its minimum again. */
  succeeded(key: string): void {
    const gate = this.gates.get(key);
    if (gate && gate.strikes > 0) gate.strikes = 0;
  }

  /** When `key` may send again (0: now). */
  heldUntil(key: string): number {
    return this.gates.get(key)?.holdUntil ?? 0;
  }

  /** One device over its own rate (FCM per-device quota, APNs TooManyRequests): only its sends wait. */
  holdDevice(deviceKey: string, until: number): void {
    if (this.deviceHolds.size >= MAX_DEVICE_HOLDS) {
      const now = this.now();
      for (const [k, t] of this.deviceHolds) if (t <= now) this.deviceHolds.delete(k);
    }
    this.deviceHolds.set(deviceKey, Math.max(this.deviceHolds.get(deviceKey) ?? 0, until));
  }

  deviceHeldUntil(deviceKey: string): number {
    const until = this.deviceHolds.get(deviceKey);
    if (until === undefined) return 0;
    if (until <= this.now()) this.deviceHolds.delete(deviceKey);
    return until;
  }

  private gate(key: string): Gate {
    let gate = this.gates.get(key);
    if (!gate) {
      gate = {
        tokens: 0,
        tokensAt: 0,
        holdUntil: 0,
        strikes: 0,
        waiters: [],
        pumping: false,
        spent: 0,
        spentBefore: 0,
        windowAt: 0,
      };
      this.gates.set(key, gate);
    }
    return gate;
  }

  private reservoir(gate: Gate, now: number): number {
    if (now - gate.tokensAt > RESERVOIR_TTL_MS) gate.tokens = 0;
    return gate.tokens;
  }

  private spend(gate: Gate, now: number): void {
    gate.tokens--;
    this.startWindowIfDue(gate, now);
    gate.spent++;
  }

  /** Tokens the key spent in about the last window (the fuller of the current and the previous one). */
  private recentlySpent(gate: Gate, now: number): number {
    this.startWindowIfDue(gate, now);
    return Math.max(gate.spent, gate.spentBefore);
  }

  /** Once a window has passed, a new one starts; the one before it counts only if it just ended. */
  private startWindowIfDue(gate: Gate, now: number): void {
    if (now - gate.windowAt < RESERVOIR_TTL_MS) return;
    gate.spentBefore = now - gate.windowAt < 2 * RESERVOIR_TTL_MS ? gate.spent : 0;
    gate.spent = 0;
    gate.windowAt = now;
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
          // Whoever must answer before the hold ends is told so now, not at its deadline.
          gate.waiters = gate.waiters.filter((w) =>
            Math.min(w.deadline, w.holdLimit) > gate.holdUntil ? true : (w.resolve(false), false),
          );
          if (gate.waiters.length === 0) break;
          await sleep(Math.min(gate.holdUntil, earliest) - now);
          continue;
        }
        while (gate.waiters.length > 0 && this.reservoir(gate, now) >= 1) {
          this.spend(gate, now);
          gate.waiters.shift()!.resolve(true);
        }
        if (gate.waiters.length === 0) break;
        const ahead = Math.max(gate.waiters.length, this.recentlySpent(gate, now));
        const want = Math.max(1, Math.min(ahead, Math.floor(spec.capacity), MAX_TOKENS_PER_TAKE));
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
