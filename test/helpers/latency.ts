/** The `p`th percentile of `samples` (nearest rank). */
export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export const p99 = (samples: number[]): number => percentile(samples, 99);

/**
 * Runs `measure` for up to `windows` windows, stopping at the first whose samples have a p99 under
 * `limitMs`; returns every window's result, the one to judge last. A machine busy with other work
 * can spoil one window's tail, while code that stalls what is measured spoils every window: the
 * limit keeps its strength, and the caller still asserts it on the last window.
 */
export async function measureUntilP99Under<T>(
  limitMs: number,
  measure: (window: number) => Promise<T>,
  samplesOf: (result: T) => number[],
  windows = 3,
): Promise<T[]> {
  const results: T[] = [];
  for (let w = 0; w < windows; w++) {
    const result = await measure(w);
    results.push(result);
    if (p99(samplesOf(result)) < limitMs) break;
  }
  return results;
}
