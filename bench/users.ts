// bench:users — POST /api/v1/users (a new user with 3 properties per request) on Herald against a bare
// Fastify hello at the same log level, rounds alternated in one run (bench/lib/ab.ts).
// Usage: npm run bench:users [-- --duration 5 --rounds 3 --connections 32 --dialect sqlite|postgres
//        --instances 1 --profile DIR (CPU profile of Herald) --no-write]
import os from 'node:os';
import path from 'node:path';
import { alternate, checkGenerator, fixed, generatorLine, sampleRows, SAMPLE_HEADERS } from './lib/ab.js';
import { numberArg } from './lib/bench-args.js';
import { commandLine, markdownTable, recordSummary, today, writeBenchmarkSection } from './lib/bench-report.js';
import { LOG_LEVEL, startBaseline, startHerald, type BenchDialect } from './lib/herald-server.js';

const DURATION = numberArg('duration', 5);
const ROUNDS = numberArg('rounds', 3);
const CONNECTIONS = numberArg('connections', 32);
const INSTANCES = numberArg('instances', 1);
const dialectAt = process.argv.indexOf('--dialect');
const DIALECT: BenchDialect = dialectAt > 0 && process.argv[dialectAt + 1] === 'postgres' ? 'postgres' : 'sqlite';
const profileAt = process.argv.indexOf('--profile');
const PROFILE = profileAt > 0 ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.argv[profileAt + 1]!)}`] : [];

const BODY = JSON.stringify({ project_user_id: 'bench-[<id>]', properties: { plan: 'pro', score: 42, vip: true } });

async function main(): Promise<void> {
  const herald = await startHerald({ dialect: DIALECT, instances: INSTANCES, nodeArgs: PROFILE });
  const hello = await startBaseline('bench/hello-fastify.ts', '/');
  try {
    const baseline = {
      name: 'bare Fastify hello',
      procs: [hello.proc],
      urls: [hello.url('/api/v1/users')],
      body: '{}',
    };
    const store = DIALECT === 'sqlite' ? 'embedded SQLite' : `PostgreSQL, ${INSTANCES} instance(s)`;
    const target = {
      name: `Herald create-user (${store})`,
      procs: herald.procs,
      urls: herald.urls('/api/v1/users'),
      headers: { 'x-service-project-id': herald.projectId, 'x-service-api-key': herald.secretKey },
      body: BODY,
    };
    const check = await checkGenerator(baseline, [CONNECTIONS, CONNECTIONS * 2], DURATION);
    const ab = await alternate(baseline, target, { connections: CONNECTIONS, duration: DURATION, rounds: ROUNDS });
    const h = sampleRows(target.name, ab.herald);
    const b = sampleRows(baseline.name, ab.baseline);
    const report = [
      `Command: \`${commandLine('bench:users')}\`, run ${today()} (Node ${process.version}, ${os.cpus().length} cores shared with the load generator and other work).`,
      '',
      `autocannon, ${CONNECTIONS} connections, no pipelining, ${ROUNDS} rounds of ${DURATION} s alternated hello, Herald after a 2 s warm-up of each; each Herald request creates a new user with 3 properties. Both servers log at \`${LOG_LEVEL}\`; Herald runs as \`npm start\` on ${store} with its rate limits raised so the limiter runs on every request but never refuses. CPU per request is the server process's user + system time (/proc) over the requests it answered.`,
      '',
      markdownTable(SAMPLE_HEADERS, [b, h]),
      '',
      `**Ratio Herald / hello: ${fixed(ab.ratio)} in req/s** (median of the per-round ratios ${ab.ratios.map((r) => fixed(r)).join(', ')}), **${fixed(ab.cpuRatio)} in CPU per request** (hello µs ÷ Herald µs). Target >= 0.5.`,
      '',
      generatorLine('hello', check),
    ].join('\n');
    console.log(report);
    const heading =
      DIALECT === 'sqlite' ? 'Users' : `Users on PostgreSQL, ${INSTANCES} instance${INSTANCES > 1 ? 's' : ''}`;
    if (!process.argv.includes('--no-write')) writeBenchmarkSection(heading, report);
    recordSummary({
      path: `POST /api/v1/users (${store})`,
      herald: `${h[1]} req/s`,
      baseline: `bare Fastify hello: ${b[1]} req/s`,
      ratio: ab.ratio,
      cpuRatio: ab.cpuRatio,
      target: DIALECT === 'sqlite' ? 0.5 : null,
    });
  } finally {
    await Promise.all([herald.stop(), hello.proc.stop()]);
  }
}

await main();
