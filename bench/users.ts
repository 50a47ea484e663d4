// bench:users — POST /api/v1/users on Herald (embedded default) against a bare Fastify hello-world,
// with the same load generator, interleaved in one run. Usage: npm run bench:users [-- --duration 10 --rounds 3]
import autocannon from 'autocannon';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { median, numberArg } from './lib/bench-args.js';
import { markdownTable, writeBenchmarkSection } from './lib/bench-report.js';
import { freePort, startProcess, waitForHttp, type BenchProcess } from './lib/processes.js';

const DURATION = numberArg('duration', 10);
const ROUNDS = numberArg('rounds', 3);
const CONNECTIONS = 10;

interface Sample {
  reqPerSec: number;
  p50: number;
  p99: number;
  cpuUsPerReq: number;
  failures: number;
}

async function load(
  target: BenchProcess,
  url: string,
  headers: Record<string, string>,
  pipelining: number,
  overallRate?: number,
): Promise<Sample> {
  const cpuBefore = target.cpuSeconds();
  const result = await autocannon({
    url,
    method: 'POST',
    connections: CONNECTIONS,
    pipelining,
    duration: DURATION,
    ...(overallRate ? { overallRate } : {}),
    headers: { 'content-type': 'application/json', ...headers },
    // A new user on every request, with a few properties, so the database really writes.
    body: JSON.stringify({ project_user_id: 'bench-[<id>]', properties: { plan: 'pro', score: 42, vip: true } }),
    idReplacement: true,
  });
  const cpu = target.cpuSeconds() - cpuBefore;
  return {
    reqPerSec: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuUsPerReq: Math.round((cpu * 1e6) / Math.max(1, result.requests.total)),
    failures: result.errors + result.non2xx,
  };
}

function summarize(label: string, samples: Sample[]) {
  return {
    label,
    reqPerSec: median(samples.map((s) => s.reqPerSec)),
    p50: median(samples.map((s) => s.p50)),
    p99: median(samples.map((s) => s.p99)),
    cpuUsPerReq: median(samples.map((s) => s.cpuUsPerReq)),
    failures: samples.reduce((n, s) => n + s.failures, 0),
    rounds: samples.map((s) => s.reqPerSec).join(', '),
  };
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-'));
  const heraldPort = await freePort();
  const helloPort = await freePort();
  // The management limit is raised so the limiter runs on every request but never refuses.
  const herald = startProcess(['--import', 'tsx', 'src/main.ts'], {
    PORT: String(heraldPort),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    RATE_LIMIT_DEFAULTS: 'management=1000000',
  });
  const hello = startProcess(['--import', 'tsx', 'bench/hello-fastify.ts'], { PORT: String(helloPort) });
  try {
    await waitForHttp(`http://127.0.0.1:${heraldPort}/readyz`);
    await waitForHttp(`http://127.0.0.1:${helloPort}/`);
    const line = herald
      .output()
      .split('\n')
      .find((l) => l.includes('secret_key'));
    if (!line) throw new Error(`Herald printed no default project:\n${herald.output()}`);
    const created = JSON.parse(line) as { project_id: string; secret_key: string };
    const auth = { 'x-service-project-id': created.project_id, 'x-service-api-key': created.secret_key };
    const heraldUrl = `http://127.0.0.1:${heraldPort}/api/v1/users`;
    const helloUrl = `http://127.0.0.1:${helloPort}/api/v1/users`;

    // Warm both up (JIT, SQLite pages), then interleave rounds so machine noise hits both alike.
    await load(hello, helloUrl, {}, 1);
    await load(herald, heraldUrl, auth, 1);
    const samples = new Map<string, Sample[]>();
    const add = (key: string, s: Sample) => samples.set(key, [...(samples.get(key) ?? []), s]);
    for (let round = 0; round < ROUNDS; round++) {
      for (const pipelining of [1, 10]) {
        add(`hello-${pipelining}`, await load(hello, helloUrl, {}, pipelining));
        add(`herald-${pipelining}`, await load(herald, heraldUrl, auth, pipelining));
      }
    }
    const rows = [1, 10].flatMap((p) => [
      summarize(`bare Fastify hello, pipelining ${p}`, samples.get(`hello-${p}`)!),
      summarize(`Herald create-user, pipelining ${p}`, samples.get(`herald-${p}`)!),
    ]);
    const heraldPeak = Math.max(...rows.filter((r) => r.label.startsWith('Herald')).map((r) => r.reqPerSec));
    const halfRate = Math.round(heraldPeak / 2);
    const half: Sample[] = [];
    for (let round = 0; round < ROUNDS; round++) half.push(await load(herald, heraldUrl, auth, 1, halfRate));
    rows.push(summarize(`Herald create-user at half peak (${halfRate} req/s)`, half));

    const ratio = (p: number, key: 'reqPerSec' | 'cpuUsPerReq') => {
      const h = rows.find((r) => r.label === `Herald create-user, pipelining ${p}`)!;
      const f = rows.find((r) => r.label === `bare Fastify hello, pipelining ${p}`)!;
      return key === 'reqPerSec' ? (h.reqPerSec / f.reqPerSec).toFixed(2) : (f.cpuUsPerReq / h.cpuUsPerReq).toFixed(2);
    };
    const report = [
      `Command: \`npm run bench:users -- --duration ${DURATION} --rounds ${ROUNDS}\` (autocannon, ${CONNECTIONS} connections, ${DURATION} s per run, ${ROUNDS} interleaved rounds after a warm-up, medians; each request creates a new user with 3 properties; Herald runs as \`npm start\` on the embedded SQLite default with LOG_LEVEL=info and its management rate limit raised so the limiter runs but never refuses; ${os.cpus().length} cores shared with the load generator, Node ${process.version}). Measured ${new Date().toISOString().slice(0, 10)}.`,
      '',
      markdownTable(
        ['run', 'req/s (median)', 'rounds', 'server CPU µs/req', 'p50 ms', 'p99 ms', 'errors + non-2xx'],
        rows.map((r) => [r.label, r.reqPerSec, r.rounds, r.cpuUsPerReq, r.p50, r.p99, r.failures]),
      ),
      '',
      `Ratio Herald / bare Fastify in req/s: ${ratio(1, 'reqPerSec')} (pipelining 1), ${ratio(10, 'reqPerSec')} (pipelining 10); in server CPU per request: ${ratio(1, 'cpuUsPerReq')} and ${ratio(10, 'cpuUsPerReq')}. Target >= 0.5.`,
      `p99 at half of Herald's peak rate: ${rows.at(-1)!.p99} ms (target < 20 ms).`,
      `Peak RSS: Herald ${herald.peakRssMb()} MB, bare Fastify ${hello.peakRssMb()} MB.`,
    ].join('\n');
    console.log(report);
    if (!process.argv.includes('--no-write')) writeBenchmarkSection('Users', report);
  } finally {
    await Promise.all([herald.stop(), hello.stop()]);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
