/**
 * Rule `campaign-results` (docs/campaigns.md, "Measurement: results"): a rate with its 95% Wilson
 * score interval, and the difference of two rates with Newcombe's hybrid score interval (built from
 * the two Wilson intervals). Both stay inside [0, 1] (resp. [−1, 1]) and behave at 0 and n successes,
 * where the normal (Wald) interval collapses to a point.
 */

/** z for a two-sided 95% interval: Φ⁻¹(0.975). */
export const Z95 = 1.959963984540054;
export const CONFIDENCE_LEVEL = 0.95;

export interface RateInterval {
  /** successes / trials. */
  rate: number;
  low: number;
  high: number;
}

export interface Lift {
  /** The arm it is measured against (`control`, or the first variant when the control has no rate). */
  baseline: string;
  /** rate − baseline rate, with its 95% interval. */
  difference: number;
  low: number;
  high: number;
  /** (rate − baseline rate) / baseline rate; null when the baseline rate is 0. */
  relative: number | null;
}

/**
 * Wilson score interval: (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n). Null without trials
 * (no rate to state).
 */
export function wilson(successes: number, trials: number, z = Z95): RateInterval | null {
  if (trials <= 0) return null;
  const p = successes / trials;
  const z2 = z * z;
  const denominator = 1 + z2 / trials;
  const centre = (p + z2 / (2 * trials)) / denominator;
  const half = (z / denominator) * Math.sqrt((p * (1 - p)) / trials + z2 / (4 * trials * trials));
  // Exactly 0 (resp. 1) at 0 (resp. n) successes, as the formula gives without rounding.
  return {
    rate: p,
    low: successes <= 0 ? 0 : Math.max(0, centre - half),
    high: successes >= trials ? 1 : Math.min(1, centre + half),
  };
}

/**
 * The difference d = p₁ − p₂ with Newcombe's hybrid score interval: with Wilson intervals
 * (l₁, u₁) and (l₂, u₂), low = d − √((p₁ − l₁)² + (u₂ − p₂)²), high = d + √((u₁ − p₁)² + (p₂ − l₂)²).
 */
export function lift(arm: RateInterval, baseline: RateInterval, baselineName: string): Lift {
  const d = arm.rate - baseline.rate;
  return {
    baseline: baselineName,
    difference: d,
    low: d - Math.hypot(arm.rate - arm.low, baseline.high - baseline.rate),
    high: d + Math.hypot(arm.high - arm.rate, baseline.rate - baseline.low),
    relative: baseline.rate === 0 ? null : d / baseline.rate,
  };
}
