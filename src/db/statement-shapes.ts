/*
 * Few statement shapes for statements whose SQL grows with a count (multi-row INSERTs, IN lists).
 * SQLite keeps each prepared statement (the connection caches up to 500, src/db/open-sqlite.ts), and
 * such a statement compiles to a program as long as its rows or list: one statement per count seen
 * (1 to 100 rows, 1 to 500 ids) held megabytes per helper (docs/benchmarks.md, "Profiles behind the
 * code"), and a campaign reached more of them the larger its audience. Counts are cut or padded to
 * powers of two instead: a handful of statements per helper, whatever the traffic.
 */

/** The largest power of two not above `n` (n >= 1). */
function floorPowerOfTwo(n: number): number {
  return 2 ** Math.floor(Math.log2(n));
}

/**
 * `count` rows cut into statements of power-of-two sizes, largest first, none above `max`: at most
 * log2(max) + 1 distinct sizes, and at most that many statements beyond `count / max`.
 */
export function statementSizes(count: number, max: number): number[] {
  const largest = floorPowerOfTwo(Math.max(1, max));
  const sizes: number[] = [];
  for (let rest = count; rest > 0;) {
    const size = Math.min(largest, floorPowerOfTwo(rest));
    sizes.push(size);
    rest -= size;
  }
  return sizes;
}

/**
 * `items` (at least one, at most `max`) padded to the next power of two, or to `max`, by repeating the
 * last: for an IN list, where a repeated value changes nothing.
 */
export function paddedList<T>(items: readonly T[], max: number): T[] {
  const size = Math.min(max, 2 ** Math.ceil(Math.log2(items.length)));
  const padded = [...items];
  while (padded.length < size) padded.push(items[items.length - 1]!);
  return padded;
}
