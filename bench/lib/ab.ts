// The A/B harness every HTTP ratio in docs/benchmarks.md comes from: autocannon rounds alternated
// baseline/Herald, the ratio of each pair, the median of those ratios, and the server CPU per request
// of both read from /proc (the servers are child processes), so a busy machine cannot flatter one side.
import autocannon from 'autocannon';
import { median } from './bench-args.js';
import type { BenchProcess } from './processes.js';

export interface LoadTarget {
  name: string;
  /** The server processes (two when two Herald instances share one PostgreSQL); CPU is summed over them. */
  procs: BenchProcess[];
  /** One URL per instance; the connections are split evenly over them. */
  urls: string[];
  method?: 'POST' | 'GET';
  headers?: Record<string, string>;
  /** `[<id>]` in the body is replaced per request (a new user, a new message). */
  body?: string;
}

export interface Sample {
  reqPerSec: number;
  cpuUsPerReq: number;
  p50: number;
  p99: number;
  failures: number;
}

export interface LoadOptions {
  connections: number;
  duration: number;
  pipelining?: number;
}

export async function drive(target: LoadTarget, options: LoadOptions): Promise<Sample> {
  const cpuNow = () => target.procs.reduce((sum, p) => sum + p.cpuSeconds(), 0);
  const cpuBefore = cpuNow();
  const results = await Promise.all(
    target.urls.map((url) =>
      autocannon({
        url,
        method: target.method ?? 'POST',
        connections: Math.max(1, Math.round(options.connections / target.urls.length)),
        pipelining: options.pipelining ?? 1,
        duration: options.duration,
        headers: { 'content-type': 'application/json', ...target.headers },
        ...(target.body === undefined ? {} : { body: target.body, idReplacement: true }),
      }),
    ),
  );
  const cpu = cpuNow() - cpuBefore;
  const total = results.reduce((n, r) => n + r.requests.total, 0);
  return {
    reqPerSec: Math.round(results.reduce((n, r) => n + r.requests.average, 0)),
    cpuUsPerReq: Math.round((cpu * 1e6) / Math.max(1, total)),
    p50: Math.max(...results.map((r) => r.latency.p50)),
    p99: Math.max(...results.map((r) => r.latency.p99)),
    failures: results.reduce((n, r) => n + r.errors + r.timeouts + r.non2xx, 0),
  };
}

export interface AbResult {
  baseline: Sample[];
  herald: Sample[];
  /** Median over rounds of Herald req/s ÷ baseline req/s of the same round. */
  ratio: number;
  /** Median over rounds of baseline CPU/req ÷ Herald CPU/req (1 = as cheap as the baseline). */
  cpuRatio: number;
  /** Per-round throughput ratios, to show the spread. */
  ratios: number[];
}

/**
 * Seconds each target is driven before the measured rounds: long enough that V8 has optimised the hot
 * paths of both servers (with 2 s, profiles still showed functions being optimised inside the first round).
 */
export const WARMUP_SECONDS = 5;

/** Warms every target up, then runs `rounds` rounds of each in turn (A, B, C, A, B, C, ...). */
export async function alternateAll(
  targets: LoadTarget[],
  options: LoadOptions & { rounds: number; warmup?: number },
): Promise<Sample[][]> {
  const warm = { ...options, duration: options.warmup ?? WARMUP_SECONDS };
  for (const t of targets) await drive(t, warm);
  const samples = targets.map((): Sample[] => []);
  for (let round = 0; round < options.rounds; round++)
    for (const [i, t] of targets.entries()) samples[i]!.push(await drive(t, options));
  return samples;
}

/** Ratios of `b` over `a` round by round (same-round pairs), and their medians. */
export function paired(a: Sample[], b: Sample[]): Omit<AbResult, 'baseline' | 'herald'> {
  const ratios = a.map((s, i) => b[i]!.reqPerSec / Math.max(1, s.reqPerSec));
  const cpuRatios = a.map((s, i) => s.cpuUsPerReq / Math.max(1, b[i]!.cpuUsPerReq));
  return { ratio: median(ratios), cpuRatio: median(cpuRatios), ratios };
}

/** Warms both up, then runs `rounds` pairs baseline, Herald, baseline, Herald, ... */
export async function alternate(
  baseline: LoadTarget,
  herald: LoadTarget,
  options: LoadOptions & { rounds: number; warmup?: number },
): Promise<AbResult> {
  const [a, b] = await alternateAll([baseline, herald], options);
  return { baseline: a!, herald: b!, ...paired(a!, b!) };
}

export interface GeneratorCheck {
  low: { connections: number; reqPerSec: number };
  high: { connections: number; reqPerSec: number };
  /** high ÷ low: near 1 (or below) means more load does not raise the baseline, so it is not generator-bound. */
  gain: number;
}

/**
 * Runs the baseline at two connection counts, alternated `rounds` times (medians): if doubling the
 * connections raises it materially, the load generator, not the server, was the limit.
 */
export async function checkGenerator(
  baseline: LoadTarget,
  connections: [number, number],
  duration: number,
  rounds = 2,
): Promise<GeneratorCheck> {
  const low: number[] = [];
  const high: number[] = [];
  for (let round = 0; round < rounds; round++) {
    low.push((await drive(baseline, { connections: connections[0], duration })).reqPerSec);
    high.push((await drive(baseline, { connections: connections[1], duration })).reqPerSec);
  }
  const gain = median(high.map((h, i) => h / Math.max(1, low[i]!)));
  return {
    low: { connections: connections[0], reqPerSec: Math.round(median(low)) },
    high: { connections: connections[1], reqPerSec: Math.round(median(high)) },
    gain,
  };
}

export const fixed = (n: number, digits = 2): string => n.toFixed(digits);

/** One line describing a generator check, for the report. */
export function generatorLine(name: string, check: GeneratorCheck): string {
  const verdict = check.gain < 1.1 ? 'not generator-bound' : 'POSSIBLY GENERATOR-BOUND (more connections raised it)';
  return `Load-generator check (${name}): ${check.low.reqPerSec} req/s at ${check.low.connections} connections, ${check.high.reqPerSec} at ${check.high.connections} (medians of alternated rounds; median paired gain x${fixed(check.gain)}): ${verdict}.`;
}

/** Rows for a markdown table: one per side, medians and the per-round figures. */
export function sampleRows(name: string, samples: Sample[]): (string | number)[] {
  const m = (f: (s: Sample) => number) => median(samples.map(f));
  return [
    name,
    m((s) => s.reqPerSec),
    samples.map((s) => s.reqPerSec).join(', '),
    m((s) => s.cpuUsPerReq),
    m((s) => s.p50),
    m((s) => s.p99),
    samples.reduce((n, s) => n + s.failures, 0),
  ];
}

export const SAMPLE_HEADERS = ['server', 'req/s (median)', 'rounds', 'server CPU µs/req', 'p50 ms', 'p99 ms', 'errors'];
