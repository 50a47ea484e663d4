// bench:users — POST /api/v1/users on Herald (embedded default) against a bare Fastify hello-world,
// with the same load generator in the same run. Usage: npm run bench:users [-- --duration 10]
import autocannon from 'autocannon';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { markdownTable, writeBenchmarkSection } from './lib/bench-report.js';
import { freePort, startProcess, waitForHttp, type BenchProcess } from './lib/processes.js';

const durationArg = process.argv.indexOf('--duration');
const DURATION = durationArg > 0 ? Number(process.argv[durationArg + 1]) : 10;
const CONNECTIONS = 10;

interface Run {
  label: string;
  reqPerSec: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

async function load(label: string, url: string, headers: Record<string, string>, pipelining: number, overallRate?: number): Promise<Run> {
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
  return { label, reqPerSec: Math.round(result.requests.average), p50: result.latency.p50, p99: result.latency.p99, errors: result.errors, non2xx: result.non2xx };
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-'));
  const heraldPort = await freePort();
  const helloPort = await freePort();
  const herald = startProcess(['--import', 'tsx', 'src/main.ts'], { PORT: String(heraldPort), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info', RATE_LIMIT_DEFAULTS: 'management=1000000' });
  const hello = startProcess(['--import', 'tsx', 'bench/hello-fastify.ts'], { PORT: String(helloPort) });
  const procs: BenchProcess[] = [herald, hello];
  try {
    await waitForHttp(`http://127.0.0.1:${heraldPort}/readyz`);
    await waitForHttp(`http://127.0.0.1:${helloPort}/`);
    const line = herald.output().split('\n').find((l) => l.includes('secret_key'));
    if (!line) throw new Error(`Herald printed no default project:\n${herald.output()}`);
    const created = JSON.parse(line) as { project_id: string; secret_key: string };
    const auth = { 'x-service-project-id': created.project_id, 'x-service-api-key': created.secret_key };
    const heraldUrl = `http://127.0.0.1:${heraldPort}/api/v1/users`;
    const helloUrl = `http://127.0.0.1:${helloPort}/api/v1/users`;

    const runs: Run[] = [];
    for (const pipelining of [1, 10]) {
      runs.push(await load(`fastify hello, pipelining ${pipelining}`, helloUrl, {}, pipelining));
      runs.push(await load(`herald create-user, pipelining ${pipelining}`, heraldUrl, auth, pipelining));
    }
    const heraldPeak = Math.max(...runs.filter((r) => r.label.startsWith('herald')).map((r) => r.reqPerSec));
    const halfRate = Math.round(heraldPeak / 2);
    runs.push(await load(`herald create-user at half peak (${halfRate} req/s)`, heraldUrl, auth, 1, halfRate));

    const ratio = (p: number) => {
      const h = runs.find((r) => r.label === `herald create-user, pipelining ${p}`)!;
      const f = runs.find((r) => r.label === `fastify hello, pipelining ${p}`)!;
      return (h.reqPerSec / f.reqPerSec).toFixed(2);
    };
    const table = markdownTable(
      ['run', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'non-2xx'],
      runs.map((r) => [r.label, r.reqPerSec, r.p50, r.p99, r.errors, r.non2xx]),
    );
    const report = [
      `Command: \`npm run bench:users\` (autocannon, ${CONNECTIONS} connections, ${DURATION} s per run, each request a new user with 3 properties; Herald on the embedded SQLite default with LOG_LEVEL=info, one process, management rate limit raised to 1,000,000/s so the limiter runs but never refuses; both servers on this machine, ${os.cpus().length} cores, Node ${process.version}). Measured ${new Date().toISOString().slice(0, 10)}.`,
      '',
      table,
      '',
      `Ratio Herald / bare Fastify: ${ratio(1)} (pipelining 1), ${ratio(10)} (pipelining 10). Target >= 0.5.`,
      `p99 at half of Herald's peak rate: ${runs.at(-1)!.p99} ms (target < 20 ms).`,
      `Peak RSS: Herald ${herald.peakRssMb()} MB, bare Fastify ${hello.peakRssMb()} MB.`,
    ].join('\n');
    console.log(report);
    if (!process.argv.includes('--no-write')) writeBenchmarkSection('Users', report);
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
