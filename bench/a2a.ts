// bench:a2a — A2A SendMessage with the create-user skill: Herald (durable task store) against a minimal
// @a2a-js/sdk Express server (bench/a2a-sdk-peer.ts, in-memory store) doing the same work, rounds
// alternated in one run (bench/lib/ab.ts). On PostgreSQL the create-user durable-write floor
// (bench/floor-users-pg-server.ts: one upsert, one commit, no task) runs in the same rounds as a bound.
// Usage: npm run bench:a2a [-- --duration 5 --rounds 3 --connections 32 --dialect sqlite|postgres
//        --instances 1 --profile DIR (CPU profile of Herald) --before REF [--together] --no-write
//        --herald-node-options '--max-semi-space-size=16' (NODE_OPTIONS for this tree's Herald, not the --before one)]
import os from 'node:os';
import path from 'node:path';
import {
  alternateAll,
  checkGenerator,
  drive,
  WARMUP_SECONDS,
  fixed,
  generatorLine,
  paired,
  sampleRows,
  SAMPLE_HEADERS,
  type LoadTarget,
  type Sample,
} from './lib/ab.js';
import { heraldEnvArgs, numberArg, redisArg } from './lib/bench-args.js';
import { commandLine, markdownTable, recordSummary, today, writeBenchmarkSection } from './lib/bench-report.js';
import { checkoutRef, LOG_LEVEL, startBaseline, startHerald, type BenchDialect } from './lib/herald-server.js';
import { CREATE_USER_BODY, startUsersFloor } from './lib/users-floor.js';

const DURATION = numberArg('duration', 5);
const ROUNDS = numberArg('rounds', 3);
const CONNECTIONS = numberArg('connections', 32);
const INSTANCES = numberArg('instances', 1);
const dialectAt = process.argv.indexOf('--dialect');
const DIALECT: BenchDialect = dialectAt > 0 && process.argv[dialectAt + 1] === 'postgres' ? 'postgres' : 'sqlite';
const REDIS = redisArg();
const profileAt = process.argv.indexOf('--profile');
const PROFILE = profileAt > 0 ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.argv[profileAt + 1]!)}`] : [];
const beforeAt = process.argv.indexOf('--before');
/** `--before REF`: also run Herald at that git ref, alternated with the others, to show a change's effect. */
const BEFORE = beforeAt > 0 ? process.argv[beforeAt + 1] : undefined;
/**
 * `--together` (with `--before`): before and after are driven at the same time, half the connections
 * each, instead of in turn: on a shared machine whose load swings between rounds, both then meet
 * the same noise, and only their paired ratios are reported (the peer is still alternated with after).
 */
const TOGETHER = BEFORE !== undefined && process.argv.includes('--together');

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
  const herald = await startHerald({
    dialect: DIALECT,
    instances: INSTANCES,
    nodeArgs: PROFILE,
    // This tree's Herald only: `--redis` and `--herald-node-options` (bench/lib/bench-args.ts).
    env: heraldEnvArgs(),
  });
  const sdk = await startBaseline('bench/a2a-sdk-peer.ts', '/.well-known/agent-card.json');
  // What one durable user write reaches on this PostgreSQL, with no task, JSON-RPC or feature.
  const floor = DIALECT === 'postgres' && BEFORE === undefined ? await startUsersFloor(DIALECT) : undefined;
  const ref = BEFORE === undefined ? undefined : checkoutRef(BEFORE);
  const before = ref && (await startHerald({ dialect: DIALECT, instances: INSTANCES, cwd: ref.dir }));
  try {
    const baseline = {
      name: '@a2a-js/sdk + Express, in-memory store',
      procs: [sdk.proc],
      urls: [sdk.url('/a2a')],
      headers: { 'a2a-version': '1.0' },
      body: BODY,
    };
    const store =
      (DIALECT === 'sqlite' ? 'embedded SQLite' : `PostgreSQL, ${INSTANCES} instance(s)`) +
      (REDIS ? ', rate limits in Redis' : '');
    const target = {
      name: `Herald (${store}, durable task store)`,
      procs: herald.procs,
      urls: herald.urls('/a2a'),
      headers: { 'a2a-version': '1.0', 'x-api-key': herald.secretKey },
      body: BODY,
    };
    const beforeTarget = before && {
      ...target,
      name: `Herald before (${ref.sha})`,
      procs: before.procs,
      urls: before.urls('/a2a'),
      headers: { ...target.headers, 'x-api-key': before.secretKey },
    };
    const floorTarget = floor && {
      name: 'durable-write floor of create-user (Fastify + the same upsert, no task, pg pool of 10)',
      procs: [floor.proc],
      urls: [floor.url('/api/v1/users')],
      body: CREATE_USER_BODY,
    };
    const middle = beforeTarget && !TOGETHER ? [beforeTarget] : floorTarget ? [floorTarget] : [];
    const targets = [baseline, ...middle, target];
    for (const t of [baseline, target, ...(beforeTarget ? [beforeTarget] : [])])
      for (const url of t.urls) await checkOnce(url, t.headers);
    // Together rounds come first, so before and after have served the same requests when they start
    // (after's alternated rounds would otherwise give it a longer warm-up and a bigger database).
    const pair = beforeTarget && TOGETHER ? await together(beforeTarget, target) : undefined;
    const check = await checkGenerator(baseline, [CONNECTIONS, CONNECTIONS * 2], DURATION);
    const samples = await alternateAll(targets, { connections: CONNECTIONS, duration: DURATION, rounds: ROUNDS });
    if (pair) samples.splice(1, 0, ...pair);
    const [peerSamples, heraldSamples] = [samples[0]!, samples.at(-1)!];
    const ab = paired(peerSamples, heraldSamples);
    const h = sampleRows(target.name, heraldSamples);
    const b = sampleRows(baseline.name, peerSamples);
    const effect =
      beforeTarget &&
      (() => {
        const beforeSamples = samples[1]!;
        if (TOGETHER) {
          const afterTogether = samples[2]!;
          const vs = paired(beforeSamples, afterTogether);
          return [
            '',
            `Before/after in this run: Herald at \`${ref.sha}\` (${ref.subject.slice(0, 120)}) and this checkout driven together (${CONNECTIONS / 2} connections each, ${ROUNDS} rounds of ${DURATION} s after a ${WARMUP_SECONDS} s warm-up), so both met the same load.`,
            '',
            markdownTable(SAMPLE_HEADERS, [
              sampleRows(beforeTarget.name, beforeSamples),
              sampleRows(`${target.name}, driven together`, afterTogether),
            ]),
            '',
            `After / before: **${fixed(vs.ratio)} in req/s** (${vs.ratios.map((r) => fixed(r)).join(', ')}), **${fixed(vs.cpuRatio)} in CPU per request** (before µs ÷ after µs; above 1 = cheaper now).`,
          ].join('\n');
        }
        const vs = paired(beforeSamples, heraldSamples);
        const vsPeer = paired(peerSamples, beforeSamples);
        return [
          '',
          `Before/after in this run: Herald at \`${ref.sha}\` (${ref.subject.slice(0, 120)}) against this checkout, alternated with the SDK peer.`,
          '',
          markdownTable(SAMPLE_HEADERS, [sampleRows(beforeTarget.name, beforeSamples)]),
          '',
          `After / before: **${fixed(vs.ratio)} in req/s**, **${fixed(vs.cpuRatio)} in CPU per request** (before µs ÷ after µs; above 1 = cheaper now); before / SDK peer: ${fixed(vsPeer.ratio)} in req/s, ${fixed(vsPeer.cpuRatio)} in CPU per request.`,
        ].join('\n');
      })();
    const floorSamples = floorTarget && samples[1]!;
    const floorRow = floorTarget && floorSamples && sampleRows(floorTarget.name, floorSamples);
    const floorVsPeer = floorSamples && paired(peerSamples, floorSamples);
    const heraldVsFloor = floorSamples && paired(floorSamples, heraldSamples);
    const floorLines =
      floorSamples && floorVsPeer && heraldVsFloor
        ? [
            '',
            `The bound in the same rounds: bench/floor-users-pg-server.ts, a bare Fastify route running Herald's user upsert on Herald's schema through a \`pg\` pool of 10, one statement and one commit per request, with no task row, JSON-RPC, authentication or any other feature (it answers POST /api/v1/users with a new user per request).`,
            '',
            markdownTable(SAMPLE_HEADERS, [floorRow!]),
            '',
            `Floor / SDK peer: **${fixed(floorVsPeer.ratio)} in req/s** (per round ${floorVsPeer.ratios.map((r) => fixed(r)).join(', ')})${floorVsPeer.ratio < 1 ? ': one durable write on this PostgreSQL answers fewer requests than the in-memory peer, so no durable A2A task reaches the target here' : ''}; Herald / floor: **${fixed(heraldVsFloor.ratio)} in req/s** (per round ${heraldVsFloor.ratios.map((r) => fixed(r)).join(', ')}), ${fixed(heraldVsFloor.cpuRatio)} in CPU per request (Herald also authenticates, rate-limits and stores a task row beside the user).`,
          ].join('\n')
        : '';
    const report = [
      `Command: \`${commandLine('bench:a2a')}\`, run ${today()} (Node ${process.version}, ${os.cpus().length} cores shared with the load generator and other work).`,
      '',
      `autocannon, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${DURATION} s alternated SDK peer, Herald after a ${WARMUP_SECONDS} s warm-up of each; each request a SendMessage (v1) with the create-user skill for a new user with 3 properties and a new messageId. The peer is bench/a2a-sdk-peer.ts (@a2a-js/sdk's DefaultRequestHandler, InMemoryTaskStore, an executor merging the user into a Map, no per-request logging); Herald runs as \`npm start\` on ${store} at log level \`${LOG_LEVEL}\` (no per-request lines either) with its a2a rate limit raised so the limiter runs but never refuses. Both servers were checked to complete one create-user task before the run. CPU per request is the server process's user + system time (/proc).`,
      '',
      markdownTable(SAMPLE_HEADERS, [b, h]),
      '',
      `**Ratio Herald / SDK peer: ${fixed(ab.ratio)} in req/s** (median of the per-round ratios ${ab.ratios.map((r) => fixed(r)).join(', ')}), **${fixed(ab.cpuRatio)} in CPU per request** (peer µs ÷ Herald µs). Target >= ${DIALECT === 'sqlite' ? 2 : 1}.`,
      '',
      generatorLine('SDK peer', check),
      floorLines,
      effect ?? '',
    ].join('\n');
    console.log(report);
    const heading =
      DIALECT === 'sqlite'
        ? 'A2A'
        : `A2A on PostgreSQL, ${INSTANCES} instance${INSTANCES > 1 ? 's' : ''}${REDIS ? ', Redis rate limits' : ''}`;
    // A before/after run is printed only: its result goes into the History table by hand.
    if (!before && !process.argv.includes('--no-write')) writeBenchmarkSection(heading, report);
    if (!before)
      recordSummary({
        path: `A2A SendMessage create-user (${store})`,
        herald: `${h[1]} req/s`,
        baseline: `@a2a-js/sdk Express peer: ${b[1]} req/s`,
        ratio: ab.ratio,
        cpuRatio: ab.cpuRatio,
        // 2x the peer on SQLite, 1x on PostgreSQL with one instance; two instances are context.
        target: DIALECT === 'sqlite' ? 2 : INSTANCES === 1 ? 1 : null,
        ...(DIALECT !== 'sqlite' && INSTANCES > 1 && { targetNote: 'context (the target is for one instance)' }),
      });
    if (floorSamples && floorVsPeer && INSTANCES === 1)
      recordSummary({
        path: 'durable-write floor of create-user (PostgreSQL) against the A2A SDK peer, same rounds',
        herald: `${floorRow![1]} req/s`,
        baseline: `@a2a-js/sdk Express peer: ${b[1]} req/s`,
        ratio: floorVsPeer.ratio,
        cpuRatio: floorVsPeer.cpuRatio,
        target: null,
        targetNote: 'bound for the A2A PostgreSQL row (one upsert, no task)',
      });
  } finally {
    await Promise.all([herald.stop(), sdk.proc.stop(), floor?.stop(), before?.stop()]);
    ref?.remove();
  }
}

/** `--together`: warm-up, then `ROUNDS` rounds with `a` and `b` under the same load at the same time. */
async function together(a: LoadTarget, b: LoadTarget): Promise<[Sample[], Sample[]]> {
  const half = { connections: Math.max(1, CONNECTIONS / 2) };
  await Promise.all([a, b].map((t) => drive(t, { ...half, duration: WARMUP_SECONDS })));
  const out: [Sample[], Sample[]] = [[], []];
  for (let round = 0; round < ROUNDS; round++) {
    const [sa, sb] = await Promise.all([a, b].map((t) => drive(t, { ...half, duration: DURATION })));
    out[0].push(sa!);
    out[1].push(sb!);
  }
  return out;
}

await main();
