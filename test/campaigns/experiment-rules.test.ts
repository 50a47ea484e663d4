import { describe, expect, it } from 'vitest';
import {
  assignmentPoint,
  assignVariant,
  AWAITING_WINNER,
  CONTROL,
  DEFAULT_VARIANT,
  NO_WINNER,
  type Experiment,
} from '../../src/campaigns/experiments/experiment.js';
import { chooseWinner, confidenceDiffer, normalCdf } from '../../src/campaigns/experiments/winner.js';

// Rule `campaign-experiments`: the pure parts (assignment and the winner rule); the fan-out through
// the app is covered by experiments.test.ts on both databases.

const message = { title: 'x' };
const experiment = (weights: number[], control: number, winner: Experiment['winner'] = null): Experiment => ({
  variants: weights.map((weight, i) => ({ variant_id: String.fromCharCode(97 + i), weight, message })),
  control_percent: control,
  winner,
});

/** mulberry32: a seeded PRNG, so the simulations below are the same on every run. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const binomial = (rand: () => number, n: number, p: number) => {
  let k = 0;
  for (let i = 0; i < n; i++) if (rand() < p) k++;
  return k;
};

describe('variant assignment (rule `campaign-experiments`)', () => {
  it('is a stable point in [0, 1) per (project, campaign, user), independent between campaigns', () => {
    const u = assignmentPoint('p1', 'c1', 'user-1');
    expect(u).toBeGreaterThanOrEqual(0);
    expect(u).toBeLessThan(1);
    expect(assignmentPoint('p1', 'c1', 'user-1')).toBe(u);
    expect(assignmentPoint('p1', 'c2', 'user-1')).not.toBe(u);
    expect(assignmentPoint('p2', 'c1', 'user-1')).not.toBe(u);
    // The separator keeps ("p1", "c1x") and ("p1c", "1x") apart.
    expect(assignmentPoint('p1', 'c1x', 'u')).not.toBe(assignmentPoint('p1c', '1x', 'u'));
  });

  it('cuts the control slice first, then the variants by cumulative weight', () => {
    const e = experiment([1, 3], 20);
    expect(assignVariant(e, 0)).toBe(CONTROL);
    expect(assignVariant(e, 0.1999)).toBe(CONTROL);
    expect(assignVariant(e, 0.2)).toBe('a'); // r = 0
    expect(assignVariant(e, 0.3999)).toBe('a'); // r just under 0.25
    expect(assignVariant(e, 0.4)).toBe('b'); // r = 0.25
    expect(assignVariant(e, 0.999999)).toBe('b');
    expect(assignVariant(experiment([], 10), 0.5)).toBe(DEFAULT_VARIANT);
    expect(assignVariant(experiment([1], 0), 0)).toBe('a');
  });

  it('with a winner rule only the test slice gets variants; the rest wait, then get the decision', () => {
    const e = experiment([1, 1], 0, { test_percent: 20, after: 'PT4H', metric: 'opened', fallback: 'none' });
    expect(assignVariant(e, 0.05)).toBe('a');
    expect(assignVariant(e, 0.15)).toBe('b');
    expect(assignVariant(e, 0.5)).toBe(AWAITING_WINNER);
    expect(assignVariant(e, 0.5, 'b')).toBe('b');
    expect(assignVariant(e, 0.5, null)).toBe(NO_WINNER);
    expect(assignVariant(e, 0.05, 'b')).toBe('a'); // a test user keeps their variant
  });

  it('splits 100k simulated users by weight within a chi-squared tolerance (df 4, p = 0.001)', () => {
    const e = experiment([50, 30, 15, 5], 10);
    const counts = new Map<string, number>();
    for (let i = 0; i < 100_000; i++) {
      const v = assignVariant(e, assignmentPoint('project-x', 'campaign-y', `user-${i}`));
      counts.set(v, (counts.get(v) ?? 0) + 1);
    }
    const expected: Record<string, number> = { control: 10_000, a: 45_000, b: 27_000, c: 13_500, d: 4_500 };
    let chi2 = 0;
    for (const [k, want] of Object.entries(expected)) chi2 += ((counts.get(k) ?? 0) - want) ** 2 / want;
    expect([...counts.keys()].sort()).toEqual(Object.keys(expected).sort());
    // 18.47 is the 0.999 quantile of chi-squared with 4 degrees of freedom.
    expect(chi2).toBeLessThan(18.47);
  });

  it('moves only users near the cuts when a weight changes', () => {
    const before = experiment([50, 50], 10);
    const after = experiment([60, 40], 10);
    let moved = 0;
    for (let i = 0; i < 10_000; i++) {
      const u = assignmentPoint('p', 'c', `u${i}`);
      const [x, y] = [assignVariant(before, u), assignVariant(after, u)];
      if (x !== y) {
        moved++;
        expect([x, y]).toEqual(['b', 'a']);
      }
    }
    // 10% of the non-control users (90%) move from b to a: about 900.
    expect(moved).toBeGreaterThan(800);
    expect(moved).toBeLessThan(1000);
  });
});

describe('the automatic winner (rule `campaign-experiments`)', () => {
  it('the normal CDF matches known values', () => {
    expect(normalCdf(0)).toBeCloseTo(0.5, 7);
    expect(normalCdf(1.959964)).toBeCloseTo(0.975, 6);
    expect(normalCdf(-1.644854)).toBeCloseTo(0.05, 6);
    expect(normalCdf(3)).toBeCloseTo(0.9986501, 6);
  });

  it('two-proportion z-test on fixed counts', () => {
    // 10% of 1000 against 13% of 1000: z = 0.03 / √(0.115 · 0.885 · 2/1000) = 2.103.
    const a = { variantId: 'a', sent: 1000, successes: 100 };
    const b = { variantId: 'b', sent: 1000, successes: 130 };
    expect(confidenceDiffer(b, a)).toBeCloseTo(0.9645, 3);
    expect(chooseWinner([a, b], { fallback: 'none' })).toMatchObject({ variantId: 'b', basis: 'winner', best: 'b' });
    // Not at 0.99: the fallback.
    expect(chooseWinner([a, b], { minConfidence: 0.99, fallback: 'a' })).toMatchObject({
      variantId: 'a',
      basis: 'fallback',
      best: 'b',
    });
    expect(chooseWinner([a, b], { minConfidence: 0.99, fallback: 'none' }).variantId).toBeNull();
  });

  it('a tie, a variant without sends or one without variance is no winner', () => {
    const tie = chooseWinner(
      [
        { variantId: 'a', sent: 500, successes: 50 },
        { variantId: 'b', sent: 500, successes: 50 },
      ],
      { fallback: 'a' },
    );
    expect(tie).toMatchObject({ variantId: 'a', basis: 'fallback' });
    const unsent = chooseWinner(
      [
        { variantId: 'a', sent: 500, successes: 400 },
        { variantId: 'b', sent: 0, successes: 0 },
      ],
      { fallback: 'none' },
    );
    expect(unsent).toMatchObject({ variantId: null, basis: 'fallback', best: null });
    const none = chooseWinner(
      [
        { variantId: 'a', sent: 500, successes: 0 },
        { variantId: 'b', sent: 500, successes: 0 },
      ],
      { fallback: 'none' },
    );
    expect(none.basis).toBe('fallback');
  });

  it('with three variants the best must beat each other one at the Bonferroni-corrected level', () => {
    const results = [
      { variantId: 'a', sent: 1000, successes: 100 },
      { variantId: 'b', sent: 1000, successes: 130 }, // beats a at 0.9645 two-sided
      { variantId: 'c', sent: 1000, successes: 60 },
    ];
    const decision = chooseWinner(results, { fallback: 'none' });
    expect(decision.required).toBeCloseTo(0.975, 10);
    expect(decision).toMatchObject({ variantId: null, basis: 'fallback', best: 'b' });
    results[1]!.successes = 145;
    expect(chooseWinner(results, { fallback: 'none' })).toMatchObject({ variantId: 'b', basis: 'winner' });
  });

  it('seeded simulation: A/A tests rarely crown a winner, a real lift almost always wins', () => {
    const rand = prng(20261129);
    let falseWinners = 0;
    let found = 0;
    const runs = 400;
    for (let i = 0; i < runs; i++) {
      const aa = chooseWinner(
        [
          { variantId: 'a', sent: 1000, successes: binomial(rand, 1000, 0.1) },
          { variantId: 'b', sent: 1000, successes: binomial(rand, 1000, 0.1) },
        ],
        { fallback: 'none' },
      );
      if (aa.basis === 'winner') falseWinners++;
      const ab = chooseWinner(
        [
          { variantId: 'a', sent: 2000, successes: binomial(rand, 2000, 0.1) },
          { variantId: 'b', sent: 2000, successes: binomial(rand, 2000, 0.15) },
        ],
        { fallback: 'none' },
      );
      if (ab.variantId === 'b') found++;
    }
    // At 0.95 about 5% of A/A tests crown a winner (20 of 400; 2.2 points is one standard deviation).
    expect(falseWinners / runs).toBeLessThan(0.09);
    expect(found / runs).toBeGreaterThan(0.98);
  });
});
