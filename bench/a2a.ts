// bench:a2a — A2A SendMessage with the create-user skill: Herald (durable store, embedded SQLite
// default) against a minimal @a2a-js/sdk Express server with an in-memory store doing the same
// work, interleaved in one run. Usage: npm run bench:a2a [-- --duration 10 --rounds 2 --no-write
//   --profile DIR (CPU profile of the Herald process, to see where its time goes)]
import autocannon from 'autocannon';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { median, numberArg } from './lib/bench-args.js';
import { commandLine, markdownTable, writeBenchmarkSection } from './lib/bench-report.js';
import { freePort, startProcess, waitForHttp, type BenchProcess } from './lib/processes.js';

const DURATION = numberArg('duration', 10);
const ROUNDS = numberArg('rounds', 3);
const CONNECTIONS = 10;

interface Run {
  reqPerSec: number;
  /** Server CPU (user + system) per request: steadier than req/s on a shared machine. */
  cpuUsPerReq: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

// A new message (idempotency key) and a new user on every request, so both servers really write.
const BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'SendMessage',
  params: {
    message: {
      messageId: 'bench-[<id>]',
      role: 'ROLE_USER',
      parts: [
        {
          data: {
            skill: 'create-user',
            projectUserId: 'user-[<id>]',
            properties: { plan: 'pro', score: 42, vip: true },
          },
        },
      ],
    },
  },
});

async function load(
  url: string,
  headers: Record<string, string>,
  duration: number,
  server?: BenchProcess,
): Promise<Run> {
  const cpuBefore = server?.cpuSeconds() ?? 0;
  const result = await autocannon({
    url,
    method: 'POST',
    connections: CONNECTIONS,
    duration,
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...headers },
    body: BODY,
    idReplacement: true,
  });
  const cpuUsPerReq =
    server === undefined
      ? Number.NaN
      : Math.round(((server.cpuSeconds() - cpuBefore) * 1_000_000) / Math.max(1, result.requests.total));
  return {
    reqPerSec: Math.round(result.requests.average),
    cpuUsPerReq,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

/** Answers one request and checks it completed, so a broken server cannot post a fast number. */
async function checkOnce(url: string, headers: Record<string, string>): Promise<void> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...headers },
    body: BODY.replaceAll('[<id>]', 'check'),
  });
  const body = (await res.json()) as {
    result?: { task?: { status?: { state?: string }; artifacts?: { name?: string }[] } };
  };
  const task = body.result?.task;
  if (task?.status?.state !== 'TASK_STATE_COMPLETED' || task.artifacts?.[0]?.name !== 'user-result')
    throw new Error(`${url} did not complete create-user: ${JSON.stringify(body)}`);
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-a2a-'));
  const [heraldPort, sdkPort] = [await freePort(), await freePort()];
  const profileAt = process.argv.indexOf('--profile');
  const profile = profileAt > 0 ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.argv[profileAt + 1]!)}`] : [];
  const herald = startProcess([...profile, '--import', 'tsx', 'src/main.ts'], {
    PORT: String(heraldPort),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    RATE_LIMIT_DEFAULTS: 'a2a=1000000',
  });
  const sdk = startProcess(['--import', 'tsx', 'bench/a2a-sdk-peer.ts'], { PORT: String(sdkPort) });
  const procs: BenchProcess[] = [herald, sdk];
  try {
    await waitForHttp(`http://127.0.0.1:${heraldPort}/readyz`);
    await waitForHttp(`http://127.0.0.1:${sdkPort}/.well-known/agent-card.json`);
    const line = herald
      .output()
      .split('\n')
      .find((l) => l.includes('secret_key'));
    if (!line) throw new Error(`Herald printed no default project:\n${herald.output()}`);
    const auth = { 'x-api-key': (JSON.parse(line) as { secret_key: string }).secret_key };
    const targets = [
      {
        name: '@a2a-js/sdk + Express, in-memory store',
        url: `http://127.0.0.1:${sdkPort}/a2a`,
        headers: {},
        proc: sdk,
        runs: [] as Run[],
      },
      {
        name: 'Herald, SQLite (embedded default)',
        url: `http://127.0.0.1:${heraldPort}/a2a`,
        headers: auth,
        proc: herald,
        runs: [] as Run[],
      },
    ];
    for (const t of targets) {
      await checkOnce(t.url, t.headers);
      await load(t.url, t.headers, 2); // warm-up
    }
    for (let round = 0; round < ROUNDS; round++)
      for (const t of targets) t.runs.push(await load(t.url, t.headers, DURATION, t.proc));

    const rows = targets.map((t) => {
      const m = (f: (r: Run) => number) => median(t.runs.map(f));
      return [
        t.name,
        m((r) => r.reqPerSec),
        m((r) => r.cpuUsPerReq),
        m((r) => r.p50),
        m((r) => r.p99),
        t.proc.peakRssMb(),
        t.runs.reduce((n, r) => n + r.non2xx + r.errors, 0),
      ];
    });
    const ratio = (Number(rows[1]![1]) / Number(rows[0]![1])).toFixed(2);
    const cpuRatio = (Number(rows[0]![2]) / Number(rows[1]![2])).toFixed(2);
    const report = [
      `Command: \`${commandLine('bench:a2a')}\` (autocannon, ${CONNECTIONS} connections, ${ROUNDS} interleaved rounds of ${DURATION} s per server after a 2 s warm-up; each request a SendMessage (v1) with the create-user skill for a new user with 3 properties and a new messageId; Herald with LOG_LEVEL=info and its a2a rate limit raised so the limiter runs but never refuses; the peer is bench/a2a-sdk-peer.ts, @a2a-js/sdk's DefaultRequestHandler with InMemoryTaskStore and an executor merging the user into a Map; both on this machine, ${os.cpus().length} cores, Node ${process.version}). Medians over the rounds. Measured ${new Date().toISOString().slice(0, 10)}.`,
      '',
      markdownTable(['server', 'req/s', 'CPU µs/req', 'p50 ms', 'p99 ms', 'peak RSS MB', 'errors + non-2xx'], rows),
      '',
      `Ratio Herald / SDK peer: ${ratio} in req/s, ${cpuRatio} in CPU per request (target >= 2).`,
      '',
      'What the two servers do (not measured here): Herald authenticates each request (key lookup), spends a rate-limit token, and commits the user, the whole task and its idempotency key to SQLite; the peer authenticates nothing and keeps tasks in memory. `--profile DIR` writes a CPU profile of the Herald process to see where its time goes.',
    ].join('\n');
    console.log(report);
    if (!process.argv.includes('--no-write')) writeBenchmarkSection('A2A', report);
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
