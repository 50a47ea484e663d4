/** One variant's test results: users sent to and users who did the metric (opened, or converted on the primary goal). */
export interface VariantResult {
  variantId: string;
  sent: number;
  successes: number;
}

export interface WinnerDecision {
  /** The variant the rest of the audience gets, or null for none (fallback `none`). */
  variantId: string | null;
  /** `winner`: the best beat every other at the confidence; `fallback`: it did not (or there was no data). */
  basis: 'winner' | 'fallback';
  /** The best variant by rate (the candidate), even when it did not win. */
  best: string | null;
  /** The lowest two-sided confidence that the best differs from another variant (0 when not computed). */
  confidence: number;
  /** The confidence each comparison had to reach: `min_confidence`, Bonferroni-corrected over the comparisons. */
  required: number;
}

/**
 * The standard normal CDF via the complementary error function (Numerical Recipes' `erfcc`, Chebyshev
 * fit, relative error under 1.2e-7 everywhere): enough for a confidence compared with 0.95.
 */
export function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.5 * x);
  const erfc =
    t *
    Math.exp(
      -x * x -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t *
                  (0.09678418 +
                    t *
                      (-0.18628806 +
                        t *
                          (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return z >= 0 ? 1 - erfc / 2 : erfc / 2;
}

/**
 * Two-sided two-proportion z-test: the confidence that rates A and B differ, 2Φ(|z|) − 1 with
 * z = (pA − pB) / √(p̂(1 − p̂)(1/nA + 1/nB)), p̂ the pooled rate (1 − the p-value). 0 when either side
 * has no users, or the pooled rate is 0 or 1 (no variance: nothing tells them apart).
 */
export function confidenceDiffer(a: VariantResult, b: VariantResult): number {
  if (a.sent <= 0 || b.sent <= 0) return 0;
  const pooled = (a.successes + b.successes) / (a.sent + b.sent);
  const variance = pooled * (1 - pooled) * (1 / a.sent + 1 / b.sent);
  if (variance <= 0) return 0;
  const z = (a.successes / a.sent - b.successes / b.sent) / Math.sqrt(variance);
  return 2 * normalCdf(Math.abs(z)) - 1;
}

/**
 * The automatic winner (rule `campaign-experiments`, docs/campaigns.md): the variant with the highest
 * rate wins when the two-sided two-proportion z-test tells it apart from every other variant, each
 * comparison at 1 − (1 − `minConfidence`) / (k − 1) for k variants (Bonferroni: the chance that some
 * variant is declared the winner among equals stays under 1 − `minConfidence`); otherwise (a tie,
 * too few users, a variant without sends, not significant) the `fallback` (a variant id, or `none`).
 * Pure: the same counts give the same decision.
 */
export function chooseWinner(
  results: VariantResult[],
  rule: { minConfidence?: number | undefined; fallback: string },
): WinnerDecision {
  const minConfidence = rule.minConfidence ?? 0.95;
  const required = 1 - (1 - minConfidence) / Math.max(1, results.length - 1);
  const fallback = (best: string | null, confidence: number): WinnerDecision => ({
    variantId: rule.fallback === 'none' ? null : rule.fallback,
    basis: 'fallback',
    best,
    confidence,
    required,
  });
  const rated = results.filter((r) => r.sent > 0);
  if (rated.length === 0 || rated.length < results.length) return fallback(null, 0);
  const rate = (r: VariantResult) => r.successes / r.sent;
  const best = rated.reduce((top, r) => (rate(r) > rate(top) ? r : top));
  if (rated.length === 1)
    return { variantId: best.variantId, basis: 'winner', best: best.variantId, confidence: 1, required };
  let confidence = 1;
  for (const other of rated)
    if (other !== best)
      confidence = Math.min(confidence, rate(other) === rate(best) ? 0 : confidenceDiffer(best, other));
  return confidence >= required
    ? { variantId: best.variantId, basis: 'winner', best: best.variantId, confidence, required }
    : fallback(best.variantId, confidence);
}
