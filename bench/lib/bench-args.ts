/** `--name N` from the command line, or `fallback`. */
export function numberArg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

/** The median; with an even count, the mean of the two middle values. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** `--redis`: rate-limit buckets in Redis (REDIS_URL) instead of the database (PostgreSQL's default). */
export const redisArg = (): boolean => process.argv.includes('--redis');

/**
 * The environment of the measured tree's Herald (not a `--before` one) from the command line: Redis
 * with `--redis`, and `--herald-node-options` as its NODE_OPTIONS, where a heap flag replaces
 * bin/herald's default (bench/lib/herald-server.ts, `heraldNodeFlags`).
 */
export function heraldEnvArgs(): Record<string, string> {
  const nodeOptionsAt = process.argv.indexOf('--herald-node-options');
  return {
    ...(redisArg() ? { REDIS_URL: 'redis://127.0.0.1:6379' } : {}),
    ...(nodeOptionsAt > 0 ? { NODE_OPTIONS: process.argv[nodeOptionsAt + 1]! } : {}),
  };
}
