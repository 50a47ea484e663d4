// bench:users — POST /api/v1/users (a new user with 3 properties per request) on Herald against a bare
// Fastify hello at the same log level, rounds alternated in one run (bench/lib/ab.ts). A third server
// runs in the same rounds: the durable-write floor (bench/floor-users-server.ts on SQLite,
// bench/floor-users-pg-server.ts on PostgreSQL), what a create-user with no feature but the durable
// upsert costs on the same stack. `--instances 1,2` runs Herald with one instance and, in the same
// rounds, with two (each on its own database), to show whether a second instance adds throughput. A device registration
// row runs in the same rounds too: POST /api/v1/devices with the public key (a new user and FCM token per
// request), as an app registers on first launch, against create-user (target: at least 0.8 of it).
// Usage: npm run bench:users [-- --duration 5 --rounds 3 --connections 32 --dialect sqlite|postgres
//        --instances 1[,2] --profile DIR (CPU profile of Herald) --no-write
//        --herald-node-options '--max-semi-space-size=16' (NODE_OPTIONS for this tree's Herald, not the --before one)
//        --count-statements (PostgreSQL: this tree's Heralds report statements per answered request, by kind)]
import os from 'node:os';
import path from 'node:path';
import {
  alternateAll,
  checkGenerator,
  WARMUP_SECONDS,
  paired,
  fixed,
  generatorLine,
  sampleRows,
  SAMPLE_HEADERS,
  type Sample,
} from './lib/ab.js';
import { heraldEnvArgs, median, numberArg, redisArg } from './lib/bench-args.js';
import { commandLine, markdownTable, recordSummary, today, writeBenchmarkSection } from './lib/bench-report.js';
import { checkoutRef, LOG_LEVEL, startBaseline, startHerald, type BenchDialect } from './lib/herald-server.js';
import { statementCounting } from './lib/statements-per-request.js';
import { CREATE_USER_BODY, startUsersFloor } from './lib/users-floor.js';

const DURATION = numberArg('duration', 5);
const ROUNDS = numberArg('rounds', 3);
const CONNECTIONS = numberArg('connections', 32);
const instancesAt = process.argv.indexOf('--instances');
/** Herald instance counts to run in the same rounds; the first is the headline row. */
const INSTANCE_COUNTS = (instancesAt > 0 ? process.argv[instancesAt + 1]! : '1').split(',').map(Number);
const INSTANCES = INSTANCE_COUNTS[0]!;
const dialectAt = process.argv.indexOf('--dialect');
const DIALECT: BenchDialect = dialectAt > 0 && process.argv[dialectAt + 1] === 'postgres' ? 'postgres' : 'sqlite';
const REDIS = redisArg();
const profileAt = process.argv.indexOf('--profile');
const PROFILE = profileAt > 0 ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.argv[profileAt + 1]!)}`] : [];

const beforeAt = process.argv.indexOf('--before');
/** `--before REF`: also run Herald at that git ref, alternated with the others, to show a change's effect. */
const BEFORE = beforeAt > 0 ? process.argv[beforeAt + 1] : undefined;

const COUNTING =
  process.argv.includes('--count-statements') && DIALECT === 'postgres' ? statementCounting() : undefined;
const BASE_ENV = heraldEnvArgs();
/** This tree's Herald's environment: `--redis`, `--herald-node-options` (bench/lib/bench-args.ts), `--count-statements`. */
const HERALD_ENV = { ...BASE_ENV, ...COUNTING?.env(BASE_ENV.NODE_OPTIONS) };

const DEVICE_BODY = JSON.stringify({ project_user_id: 'app-[<id>]', platform: 'android', fcm_token: 'fcm-[<id>]' });
/** Device registrations per second against create-user's, same rounds. */
const DEVICE_TARGET = 0.8;
/** Create-user req/s against its durable-write floor's, same rounds. */
const FLOOR_TARGET = DIALECT === 'sqlite' ? 0.9 : 0.8;

async function main(): Promise<void> {
  const herald = await startHerald({
    dialect: DIALECT,
    instances: INSTANCES,
    nodeArgs: PROFILE,
    env: HERALD_ENV,
  });
  // Other instance counts (`--instances 1,2`), each on its own database, in the same rounds.
  const more = [];
  for (const instances of INSTANCE_COUNTS.slice(1))
    more.push(
      await startHerald({
        dialect: DIALECT,
        instances,
        env: HERALD_ENV,
      }),
    );
  const hello = await startBaseline('bench/hello-fastify.ts', '/');
  const floor = await startUsersFloor(DIALECT);
  const ref = BEFORE === undefined ? undefined : checkoutRef(BEFORE);
  const before = ref && (await startHerald({ dialect: DIALECT, instances: INSTANCES, cwd: ref.dir }));
  try {
    const baseline = {
      name: 'bare Fastify hello',
      procs: [hello.proc],
      urls: [hello.url('/api/v1/users')],
      body: '{}',
    };
    const store =
      (DIALECT === 'sqlite' ? 'embedded SQLite' : `PostgreSQL, ${INSTANCES} instance(s)`) +
      (REDIS ? ', rate limits in Redis' : '');
    const target = {
      name: `Herald create-user (${store})`,
      procs: herald.procs,
      urls: herald.urls('/api/v1/users'),
      headers: { 'x-service-project-id': herald.projectId, 'x-service-api-key': herald.secretKey },
      body: CREATE_USER_BODY,
    };
    const check = await checkGenerator(baseline, [CONNECTIONS, CONNECTIONS * 2], DURATION);
    const beforeTarget = before && {
      ...target,
      name: `Herald before (${ref.sha})`,
      procs: before.procs,
      urls: before.urls('/api/v1/users'),
      headers: { 'x-service-project-id': before.projectId, 'x-service-api-key': before.secretKey },
    };
    const moreTargets = more.map((m, i) => ({
      ...target,
      name: `Herald create-user (PostgreSQL, ${INSTANCE_COUNTS[i + 1]} instance(s))`,
      procs: m.procs,
      urls: m.urls('/api/v1/users'),
      headers: { 'x-service-project-id': m.projectId, 'x-service-api-key': m.secretKey },
    }));
    const floorTarget = floor && {
      name: `durable-write floor (Fastify + the same upsert, no features${DIALECT === 'postgres' ? ', pg pool of 10' : ''})`,
      procs: [floor.proc],
      urls: [floor.url('/api/v1/users')],
      body: CREATE_USER_BODY,
    };
    const deviceTarget = {
      name: `Herald device registration, public key (${store})`,
      procs: herald.procs,
      urls: herald.urls('/api/v1/devices'),
      headers: { 'x-service-project-id': herald.projectId, 'x-service-api-key': herald.publicKey },
      body: DEVICE_BODY,
    };
    // With --before, the ref's device registration runs in the same rounds too, so a change to it shows.
    const beforeDeviceTarget = before && {
      ...deviceTarget,
      name: `Herald before (${ref.sha}) device registration`,
      procs: before.procs,
      urls: before.urls('/api/v1/devices'),
      headers: { 'x-service-project-id': before.projectId, 'x-service-api-key': before.publicKey },
    };
    const order = [
      baseline,
      ...(floorTarget ? [floorTarget] : []),
      ...(beforeTarget ? [beforeTarget] : []),
      ...(beforeDeviceTarget ? [beforeDeviceTarget] : []),
      deviceTarget,
      target,
      ...moreTargets,
    ];
    const samples = await alternateAll(order, {
      connections: CONNECTIONS,
      duration: DURATION,
      rounds: ROUNDS,
    });
    const samplesOf = (t: (typeof order)[number]) => samples[order.indexOf(t)]!;
    const [helloSamples, heraldSamples, deviceSamples] = [samples[0]!, samplesOf(target), samplesOf(deviceTarget)];
    const deviceVsUser = paired(heraldSamples, deviceSamples);
    const deviceRow = sampleRows(deviceTarget.name, deviceSamples);
    const ab = paired(helloSamples, heraldSamples);
    const h = sampleRows(target.name, heraldSamples);
    const b = sampleRows(baseline.name, helloSamples);
    const effect =
      beforeTarget &&
      (() => {
        const beforeSamples = samplesOf(beforeTarget);
        const vs = paired(beforeSamples, heraldSamples);
        const vsHello = paired(helloSamples, beforeSamples);
        const beforeDevices = samplesOf(beforeDeviceTarget!);
        const devicesVs = paired(beforeDevices, deviceSamples);
        const beforeDeviceVsUser = paired(beforeSamples, beforeDevices);
        return [
          '',
          `Before/after in this run: Herald at \`${ref.sha}\` (${ref.subject.slice(0, 120)}) against this checkout, alternated with the hello.`,
          '',
          markdownTable(SAMPLE_HEADERS, [
            sampleRows(beforeTarget.name, beforeSamples),
            sampleRows(beforeDeviceTarget!.name, beforeDevices),
          ]),
          '',
          `Create-user after / before: **${fixed(vs.ratio)} in req/s**, **${fixed(vs.cpuRatio)} in CPU per request** (before µs ÷ after µs; above 1 = cheaper now); before / hello: ${fixed(vsHello.ratio)} in req/s, ${fixed(vsHello.cpuRatio)} in CPU per request.`,
          '',
          `Device registration after / before: **${fixed(devicesVs.ratio)} in req/s**, **${fixed(devicesVs.cpuRatio)} in CPU per request**; before, registration / create-user: ${fixed(beforeDeviceVsUser.ratio)} in req/s (per round ${beforeDeviceVsUser.ratios.map((r) => fixed(r)).join(', ')}), ${fixed(beforeDeviceVsUser.cpuRatio)} in CPU per request.`,
        ].join('\n');
      })();
    const floorRun = floorTarget && {
      samples: samplesOf(floorTarget),
      row: sampleRows(floorTarget.name, samplesOf(floorTarget)),
    };
    const floorVsHello = floorRun && paired(helloSamples, floorRun.samples);
    const heraldVsFloor = floorRun && paired(floorRun.samples, heraldSamples);
    const aboveHello = (of: Sample[]) =>
      fixed(median(of.map((x) => x.cpuUsPerReq)) - median(helloSamples.map((x) => x.cpuUsPerReq)), 0);
    const floorLines =
      floorRun && floorVsHello && heraldVsFloor
        ? [
            '',
            DIALECT === 'sqlite'
              ? `Durable-write floor in this run: bench/floor-users-server.ts, a bare Fastify route that runs Herald's user upsert on Herald's own schema with better-sqlite3 and one commit per event-loop turn, and nothing else (no authentication, rate limit, validation, metrics, request id or timeout). What it spends above the hello is the durable write with Herald's schema and group commit, so floor/hello is about the most a create-user with that write can reach against the hello here.`
              : `Durable-write floor in this run: bench/floor-users-pg-server.ts, a bare Fastify route that runs the upsert Herald compiles for PostgreSQL (JSONB merge on the same unique key, RETURNING) on Herald's own schema through a \`pg\` pool of 10 (Herald's default), one statement and one commit per request, and nothing else (no authentication, rate limit, validation, metrics, request id or timeout). CPU per request counts the server process only, not PostgreSQL's.`,
            '',
            markdownTable(SAMPLE_HEADERS, [floorRun.row]),
            '',
            `Floor / hello: **${fixed(floorVsHello.ratio)} in req/s**, **${fixed(floorVsHello.cpuRatio)} in CPU per request**; **Herald / floor: ${fixed(heraldVsFloor.ratio)} in req/s** (per round ${heraldVsFloor.ratios.map((r) => fixed(r)).join(', ')}; target >= ${FLOOR_TARGET}), ${fixed(heraldVsFloor.cpuRatio)} in CPU per request. CPU µs per request above the hello: floor ${aboveHello(floorRun.samples)}, Herald ${aboveHello(heraldSamples)}.`,
          ].join('\n')
        : '';
    const moreRuns = moreTargets.map((t) => {
      const vsOne = paired(heraldSamples, samplesOf(t));
      const vsFloor = floorRun && paired(floorRun.samples, samplesOf(t));
      return { t, vsOne, vsFloor, row: sampleRows(t.name, samplesOf(t)) };
    });
    const instancesLines =
      moreRuns.length === 0
        ? ''
        : [
            '',
            `More instances in the same rounds (each Herald on its own database; the ${CONNECTIONS} connections split evenly over the instances):`,
            '',
            markdownTable(
              SAMPLE_HEADERS,
              moreRuns.map((m) => m.row),
            ),
            '',
            ...moreRuns.map(
              (m) =>
                `${m.t.name} / ${INSTANCES} instance(s): **${fixed(m.vsOne.ratio)} in req/s** (per round ${m.vsOne.ratios.map((r) => fixed(r)).join(', ')}; target >= 1), ${fixed(m.vsOne.cpuRatio)} in CPU per request${m.vsFloor ? `; / floor: ${fixed(m.vsFloor.ratio)} in req/s` : ''}.`,
            ),
          ].join('\n');
    const report = [
      `Command: \`${commandLine('bench:users')}\`, run ${today()} (Node ${process.version}, ${os.cpus().length} cores shared with the load generator and other work).`,
      '',
      `autocannon, ${CONNECTIONS} connections, no pipelining, ${ROUNDS} rounds of ${DURATION} s alternated hello, Herald after a ${WARMUP_SECONDS} s warm-up of each; each Herald request creates a new user with 3 properties. Both servers log at \`${LOG_LEVEL}\`; Herald runs as \`npm start\` on ${store} with its rate limits raised so the limiter runs on every request but never refuses. CPU per request is the server process's user + system time (/proc) over the requests it answered.`,
      '',
      markdownTable(SAMPLE_HEADERS, [b, h]),
      '',
      `**Ratio Herald / hello: ${fixed(ab.ratio)} in req/s** (median of the per-round ratios ${ab.ratios.map((r) => fixed(r)).join(', ')}), **${fixed(ab.cpuRatio)} in CPU per request** (hello µs ÷ Herald µs). Target >= 0.5.`,
      '',
      generatorLine('hello', check),
      '',
      `Device registration in the same rounds: POST /api/v1/devices with the public key, each request a new user and FCM token (the user is created, the device inserted, the project's identity-verification setting checked).`,
      '',
      markdownTable(SAMPLE_HEADERS, [deviceRow]),
      '',
      `**Device registration / create-user: ${fixed(deviceVsUser.ratio)} in req/s** (per round ${deviceVsUser.ratios.map((r) => fixed(r)).join(', ')}), **${fixed(deviceVsUser.cpuRatio)} in CPU per request** (create-user µs ÷ registration µs). Target >= ${DEVICE_TARGET}.`,
      floorLines,
      instancesLines,
      effect ?? '',
      COUNTING?.report([
        { name: `${INSTANCE_COUNTS[0]} instance(s) (create-user and device registration)`, procs: herald.procs },
        ...more.map((m, i) => ({ name: `${INSTANCE_COUNTS[i + 1]} instance(s) (create-user only)`, procs: m.procs })),
      ]) ?? '',
    ].join('\n');
    console.log(report);
    const heading =
      DIALECT === 'sqlite'
        ? 'Users'
        : `Users on PostgreSQL, ${INSTANCES} instance${INSTANCES > 1 ? 's' : ''}${REDIS ? ', Redis rate limits' : ''}`;
    // A before/after run is printed only: its result goes into the History table by hand.
    if (!before && !process.argv.includes('--no-write')) writeBenchmarkSection(heading, report);
    if (!before)
      recordSummary({
        path: `POST /api/v1/users (${store})`,
        herald: `${h[1]} req/s`,
        baseline: `bare Fastify hello: ${b[1]} req/s`,
        ratio: ab.ratio,
        cpuRatio: ab.cpuRatio,
        target: DIALECT === 'sqlite' ? 0.5 : null,
        ...(DIALECT !== 'sqlite' && { targetNote: 'context (the floor row below holds the target)' }),
      });
    if (!before)
      recordSummary({
        path: `POST /api/v1/devices, public key (${store})`,
        herald: `${deviceRow[1]} req/s`,
        baseline: `Herald create-user: ${h[1]} req/s`,
        ratio: deviceVsUser.ratio,
        cpuRatio: deviceVsUser.cpuRatio,
        target: DEVICE_TARGET,
      });
    if (floorRun && floorVsHello && heraldVsFloor && !before) {
      recordSummary({
        path: `durable-write floor of POST /api/v1/users: bare Fastify + the same upsert, no features (${DIALECT === 'sqlite' ? 'embedded SQLite' : 'PostgreSQL'})`,
        herald: `${floorRun.row[1]} req/s`,
        baseline: `bare Fastify hello: ${b[1]} req/s`,
        ratio: floorVsHello.ratio,
        cpuRatio: floorVsHello.cpuRatio,
        target: null,
        targetNote: 'bound for the row below',
      });
      recordSummary({
        path: `POST /api/v1/users (${store}) against its durable-write floor`,
        herald: `${h[1]} req/s`,
        baseline: `floor: ${floorRun.row[1]} req/s`,
        ratio: heraldVsFloor.ratio,
        cpuRatio: heraldVsFloor.cpuRatio,
        target: FLOOR_TARGET,
      });
    }
    for (const m of before ? [] : moreRuns)
      recordSummary({
        path: `POST /api/v1/users: ${m.t.name.replace('Herald create-user ', '')} against ${INSTANCES}`,
        herald: `${m.row[1]} req/s`,
        baseline: `${INSTANCES} instance(s): ${h[1]} req/s`,
        ratio: m.vsOne.ratio,
        cpuRatio: m.vsOne.cpuRatio,
        target: 1,
      });
  } finally {
    await Promise.all([herald.stop(), ...more.map((m) => m.stop()), hello.proc.stop(), floor.stop(), before?.stop()]);
    ref?.remove();
  }
}

await main();
