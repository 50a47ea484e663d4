/** The `METRICS_TOKEN` tests give a server whose `/metrics` they read, and the header that presents it. */
export const METRICS_TOKEN = 'test-metrics-token-4f1c2a9e';
export const METRICS_ENV = { METRICS_TOKEN };
export const METRICS_AUTH = { authorization: `Bearer ${METRICS_TOKEN}` };

/** Reads one sample from Prometheus text output: `name` with exactly `labels`, or undefined. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) found[pair[1]!] = pair[2]!;
    const keys = Object.keys(labels);
    if (keys.length === Object.keys(found).length && keys.every((k) => found[k] === labels[k])) return Number(match[3]);
  }
  return undefined;
}
