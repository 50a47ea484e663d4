// bench:push — 10,000 sends through POST /api/v1/send-push-notifications (500-item requests) on Herald
// started as in production (embedded SQLite), to the FCM stand-in running as its own process, against the
// push floor, with a raw HTTP/2 send loop to the same stand-in (same concurrency) as context, in the same
// run, interleaved. The target is a ratio to the floor.
// The push floor is the same durable work with nothing else: in this process, the raw loop's sends,
// each recorded as Herald records a direct push (src/push/push.service.ts, `sendToDevices`): one
// `deliveries` row per send (message id, device, status, FCM message name, times), a request's 500 rows
// inserted once all its sends have ended, in one BEGIN IMMEDIATE transaction of Herald's statement sizes
// (64-row multi-row INSERTs, src/push/deliveries.repository.ts), plain SQL through better-sqlite3, on a
// database made fresh for this run with Herald's schema (every index), connection settings (WAL,
// synchronous = NORMAL, src/db/open-sqlite.ts) and checkpointer thread (bench/lib/floor-records.ts). It does
// not include: HTTP ingress and the JSON answer, authentication, validation, the device lookups, the OAuth
// token cache, quota and retry bookkeeping, notices (none are subscribed here, so Herald writes none
// either); its sends are not cut into requests (a request's sends are the loop's next 500).
// Usage: npm run bench:push [-- --rounds 3 --sends 10000 --profile DIR (CPU profile of the Herald process)
//        --before REF (also Herald at that git ref, alternated, to show a change's effect)
//        --herald-node-options '--max-semi-space-size=16' (NODE_OPTIONS for this Herald only, not the --before one;
//        a heap flag given there replaces bin/herald's default, as it does for bin/herald)
//        --no-write (print the report, leave docs/benchmarks.md alone)]
import crypto from 'node:crypto';
import fs from 'node:fs';
import http2 from 'node:http2';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { median, numberArg } from './lib/bench-args.js';
import { commandLine, markdownTable, recordSummary, writeBenchmarkSection } from './lib/bench-report.js';
import { checkoutRef, startHerald, type HeraldServers } from './lib/herald-server.js';
import { freePort, startProcess, type BenchProcess } from './lib/processes.js';
import { directPushRecorder, type SendRecorder } from './lib/floor-recorders.js';
import { openFloorDatabase } from './lib/floor-records.js';
import { loadConfig } from '../src/config.js';
import { systemClock } from '../src/lib/clock.js';
import type { FcmCredentials } from '../src/push/credentials/credentials.service.js';
import { HttpsClient } from '../src/push/https-client.js';
import { FcmTokenSource } from '../src/push/providers/fcm-auth.js';

const ROUNDS = numberArg('rounds', 3);
const SENDS = numberArg('sends', 10_000);
const BATCH = 500;
const REQUESTS_IN_FLIGHT = 4;
/** Target: direct push at least this share of the push floor's sends/s. */
const TARGET = 0.85;
/** Herald's default pool per provider origin (`PUSH_HTTP2_SESSIONS` x `PUSH_HTTP2_STREAMS`); the raw loop gets the same. */
const { pushHttp2Sessions: SESSIONS, pushHttp2Streams: STREAMS } = loadConfig({});

/** Waits for a JSON file another process writes, and returns it once it is complete (parses). */
async function waitForJsonFile<T>(file: string, timeoutMs = 60_000): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    try {
      return JSON.parse(fs.readFileSync(file, 'utf8')) as T;
    } catch {
      // not there, or not written completely yet
    }
  }
  throw new Error(`${file} did not appear`);
}

function getJson(url: string, ca: string): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca }, (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve(JSON.parse(text) as Record<string, number>));
      })
      .on('error', reject);
  });
}

async function api(
  base: string,
  auth: Record<string, string>,
  method: string,
  url: string,
  body: unknown,
): Promise<unknown> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

/**
 * N FCM v1 POSTs over SESSIONS x STREAMS concurrent HTTP/2 streams, nothing else (the raw loop); with a
 * `recorder`, each send recorded too (the floor), its last commit inside the timed span.
 */
async function rawLoop(
  fcmUrl: string,
  ca: string,
  projectId: string,
  accessToken: string,
  tokens: string[],
  recorder?: SendRecorder,
): Promise<number> {
  const sessions = Array.from({ length: SESSIONS }, () => http2.connect(fcmUrl, { ca }));
  let next = 0;
  let failures = 0;
  const worker = async (session: http2.ClientHttp2Session) => {
    while (next < tokens.length) {
      const i = next++;
      const token = tokens[i]!;
      const body = JSON.stringify({
        message: {
          token,
          notification: { title: 'Bench', body: 'Raw loop' },
          data: { herald_message_id: recorder ? recorder.start(i) : crypto.randomUUID() },
        },
      });
      await new Promise<void>((resolve) => {
        const stream = session.request({
          ':method': 'POST',
          ':path': `/v1/projects/${projectId}/messages:send`,
          authorization: `Bearer ${accessToken}`,
          'content-type': 'application/json',
        });
        let status = 0;
        let answer = '';
        stream.on('response', (h) => {
          status = Number(h[':status']);
          if (status !== 200) failures++;
        });
        // The floor stores the FCM message name from the answer, as Herald does; the raw loop drops it.
        if (recorder) stream.on('data', (d: Buffer) => (answer += d.toString()));
        else stream.on('data', () => {});
        stream.on('close', () => {
          recorder?.ended(i, status, answer);
          resolve();
        });
        stream.end(body);
      });
    }
  };
  const started = performance.now();
  await Promise.all(sessions.flatMap((s) => Array.from({ length: STREAMS }, () => worker(s))));
  await recorder?.flush();
  const elapsed = performance.now() - started;
  for (const s of sessions) s.close();
  if (failures > 0) throw new Error(`${recorder ? 'floor' : 'raw loop'}: ${failures} failed sends`);
  return (tokens.length / elapsed) * 1000;
}

/** Herald: SENDS / BATCH requests of 500 items, REQUESTS_IN_FLIGHT at a time. */
async function heraldRun(base: string, auth: Record<string, string>, deviceIds: string[]): Promise<number> {
  const batches: string[][] = [];
  for (let i = 0; i < deviceIds.length; i += BATCH) batches.push(deviceIds.slice(i, i + BATCH));
  let next = 0;
  let failures = 0;
  const worker = async () => {
    while (next < batches.length) {
      const batch = batches[next++]!;
      const body = {
        push_notifications: batch.map((device_id) => ({
          target: { device_id },
          title: 'Bench',
          body: 'Through Herald',
        })),
      };
      const result = (await api(base, auth, 'POST', '/api/v1/send-push-notifications', body)) as {
        delivery_results: Array<{ status: string }>;
      };
      failures += result.delivery_results.filter((r) => r.status !== 'DELIVERY_RESULT_STATUS_ACCEPTED').length;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: REQUESTS_IN_FLIGHT }, worker));
  const elapsed = performance.now() - started;
  if (failures > 0) throw new Error(`herald: ${failures} sends not accepted`);
  return (deviceIds.length / elapsed) * 1000;
}

interface CpuPerSend {
  herald: number;
  fake: number;
  bench: number;
}

interface Measured {
  rate: number;
  /** CPU each process spent, in microseconds per send. */
  cpu: CpuPerSend;
  /** Wall time of the round and the CPU time of all three processes in it, in ms. */
  wallMs: number;
  cpuMs: number;
}

/** Runs `work` and returns its rate with the CPU each process spent on it. */
async function measured(
  procs: { herald: BenchProcess; fake: BenchProcess },
  sends: number,
  work: () => Promise<number>,
): Promise<Measured> {
  const cpuMs = (proc: BenchProcess) => proc.cpuSeconds() * 1000;
  const before = { herald: cpuMs(procs.herald), fake: cpuMs(procs.fake), bench: process.cpuUsage() };
  const started = performance.now();
  const rate = await work();
  const wallMs = performance.now() - started;
  const bench = process.cpuUsage(before.bench);
  const spent = {
    herald: cpuMs(procs.herald) - before.herald,
    fake: cpuMs(procs.fake) - before.fake,
    bench: (bench.user + bench.system) / 1000,
  };
  const per = (ms: number) => Math.round((ms * 1000) / sends);
  return {
    rate,
    cpu: { herald: per(spent.herald), fake: per(spent.fake), bench: per(spent.bench) },
    wallMs,
    cpuMs: spent.herald + spent.fake + spent.bench,
  };
}

interface PushHerald {
  name: string;
  proc: BenchProcess;
  servers: HeraldServers;
  base: string;
  auth: Record<string, string>;
  deviceIds: string[];
}

/** Herald started as `npm start` does (src/boot/ts-resolve.ts), from `cwd`, with FCM credentials and SENDS devices. */
async function startPushHerald(
  name: string,
  fake: { dir: string; url: string; serviceAccount: Record<string, string> },
  tokens: string[],
  options: { cwd?: string; nodeArgs?: string[]; nodeOptions?: string },
): Promise<PushHerald> {
  const servers = await startHerald({
    dialect: 'sqlite',
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.nodeArgs ? { nodeArgs: options.nodeArgs } : {}),
    env: {
      LOG_LEVEL: 'info',
      NODE_EXTRA_CA_CERTS: path.join(fake.dir, 'ca.pem'),
      FCM_API_URL: fake.url,
      RATE_LIMIT_DEFAULTS: 'management=100000/100000,send=100000/100000',
      ...(options.nodeOptions ? { NODE_OPTIONS: options.nodeOptions } : {}),
    },
  });
  const base = servers.urls('')[0]!;
  const auth = { 'x-service-project-id': servers.projectId, 'x-service-api-key': servers.secretKey };
  await api(base, auth, 'PUT', '/api/v1/push-credentials/fcm', { service_account: fake.serviceAccount });
  const deviceIds: string[] = [];
  for (let i = 0; i < tokens.length; i += 50) {
    const chunk = tokens.slice(i, i + 50);
    const ids = await Promise.all(
      chunk.map((fcm_token, j) =>
        api(base, auth, 'POST', '/api/v1/devices', {
          project_user_id: `bench-${i + j}`,
          platform: 'android',
          fcm_token,
        }),
      ),
    );
    deviceIds.push(...ids.map((d) => (d as { device_id: string }).device_id));
  }
  return { name, proc: servers.procs[0]!, servers, base, auth, deviceIds };
}

async function main(): Promise<void> {
  const loadBefore = os.loadavg()[0]!;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-push-'));
  const fakeDir = path.join(dir, 'fake');
  const fcmPort = await freePort();
  // The floor's database, fresh for this run as Herald's is (made before anything needs stopping).
  fs.mkdirSync(path.join(dir, 'floor'));
  const floorDb = await openFloorDatabase(path.join(dir, 'floor'));
  const fake = startProcess(['bin/herald', 'fake-providers', '--dir', fakeDir, '--port-fcm', String(fcmPort)], {});
  const heralds: PushHerald[] = [];
  const beforeAt = process.argv.indexOf('--before');
  const ref = beforeAt > 0 ? checkoutRef(process.argv[beforeAt + 1]!) : undefined;
  try {
    // The command writes ca.pem, then the service account, once the stand-ins listen.
    const sa = await waitForJsonFile<{
      project_id: string;
      client_email: string;
      private_key: string;
      token_uri: string;
    }>(path.join(fakeDir, 'fcm-service-account.json'));
    const ca = fs.readFileSync(path.join(fakeDir, 'ca.pem'), 'utf8');
    const fcmUrl = `https://127.0.0.1:${fcmPort}`;
    const stand = { dir: fakeDir, url: fcmUrl, serviceAccount: sa };

    const optionsAt = process.argv.indexOf('--herald-node-options');
    const nodeOptions = optionsAt > 0 ? process.argv[optionsAt + 1] : undefined;
    const profileAt = process.argv.indexOf('--profile');
    const profile = profileAt > 0 ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.argv[profileAt + 1]!)}`] : [];
    const tokens = Array.from({ length: SENDS }, () => crypto.randomBytes(32).toString('hex'));
    if (ref) heralds.push(await startPushHerald(`Herald before (${ref.sha})`, stand, tokens, { cwd: ref.dir }));
    const herald = await startPushHerald('Herald', stand, tokens, {
      nodeArgs: profile,
      ...(nodeOptions ? { nodeOptions } : {}),
    });
    heralds.push(herald);

    const creds: FcmCredentials = {
      projectId: sa.project_id,
      clientEmail: sa.client_email,
      privateKeyId: undefined,
      tokenUri: sa.token_uri,
      privateKey: sa.private_key,
      fingerprint: 'bench',
    };
    const http = new HttpsClient({ ca });
    const accessToken = await new FcmTokenSource(http, systemClock, 10_000).accessToken(creds);
    http.close();

    // The floor records to the devices Herald sends to (the same ids in its rows), in requests of BATCH.
    const floorLoop = (ids: string[]) =>
      rawLoop(
        fcmUrl,
        ca,
        sa.project_id,
        accessToken,
        tokens.slice(0, ids.length),
        directPushRecorder(floorDb, ids, BATCH),
      );
    // Warm-up of every path (connections, JIT, statement cache), then interleaved measured rounds.
    await rawLoop(fcmUrl, ca, sa.project_id, accessToken, tokens.slice(0, 2000));
    await floorLoop(herald.deviceIds.slice(0, 2000));
    for (const h of heralds) await heraldRun(h.base, h.auth, h.deviceIds.slice(0, 2000));
    const floorRowsBefore = floorDb.countRows().deliveries;
    const before = await getJson(`${fcmUrl}/__fake/stats`, ca);
    const procsOf = (h: PushHerald) => ({ herald: h.proc, fake });
    const rawRounds: Measured[] = [];
    const floorRounds: Measured[] = [];
    const heraldRounds: Measured[][] = heralds.map(() => []);
    for (let round = 0; round < ROUNDS; round++) {
      rawRounds.push(
        await measured(procsOf(herald), SENDS, () => rawLoop(fcmUrl, ca, sa.project_id, accessToken, tokens)),
      );
      floorRounds.push(await measured(procsOf(herald), SENDS, () => floorLoop(herald.deviceIds)));
      for (const [i, h] of heralds.entries())
        heraldRounds[i]!.push(await measured(procsOf(h), SENDS, () => heraldRun(h.base, h.auth, h.deviceIds)));
    }
    const after = await getJson(`${fcmUrl}/__fake/stats`, ca);
    const accepted = after.accepted! - before.accepted!;
    const expected = (2 + heralds.length) * ROUNDS * SENDS;
    if (accepted !== expected) throw new Error(`stand-in accepted ${accepted}, expected ${expected}`);
    const floorRows = floorDb.countRows().deliveries - floorRowsBefore;
    if (floorRows !== ROUNDS * SENDS) throw new Error(`the floor recorded ${floorRows} of ${ROUNDS * SENDS} sends`);

    const rates = (rounds: Measured[]) => rounds.map((r) => r.rate);
    const raw = rates(rawRounds);
    const floor = rates(floorRounds);
    const ours = rates(heraldRounds.at(-1)!);
    const ratio = median(ours) / median(floor);
    const rawRatio = median(ours) / median(raw);
    // CPU per send: the floor's sender is this process (its CPU in the floor rounds), Herald's is Herald's
    // process; each floor round is paired with the Herald round run right after it.
    const cpuRatios = floorRounds.map((r, i) => r.cpu.bench / heraldRounds.at(-1)![i]!.cpu.herald);
    const cpuRatio = median(cpuRatios);
    const rssBench = Math.round(process.resourceUsage().maxRSS / 1024);
    const fmt = (values: number[]) => values.map((v) => Math.round(v)).join(', ');
    const cpu = (rounds: Measured[], key: keyof CpuPerSend) => median(rounds.map((r) => r.cpu[key]));
    const table = markdownTable(
      ['path', 'sends/s (median)', 'rounds', 'CPU µs/send: Herald / stand-in / bench client', 'peak RSS MB'],
      [
        [
          `raw HTTP/2 loop (${SESSIONS} sessions x ${STREAMS} streams)`,
          Math.round(median(raw)),
          fmt(raw),
          `- / ${cpu(rawRounds, 'fake')} / ${cpu(rawRounds, 'bench')}`,
          `${rssBench} (bench process)`,
        ],
        [
          `push floor: raw loop + delivery records (${BATCH}-row transactions)`,
          Math.round(median(floor)),
          fmt(floor),
          `- / ${cpu(floorRounds, 'fake')} / ${cpu(floorRounds, 'bench')}`,
          `${rssBench} (bench process)`,
        ],
        ...heralds.map((h, i) => {
          const rounds = heraldRounds[i]!;
          return [
            `${h.name} /api/v1/send-push-notifications (${BATCH}-item requests, ${REQUESTS_IN_FLIGHT} in flight)`,
            Math.round(median(rates(rounds))),
            fmt(rates(rounds)),
            `${cpu(rounds, 'herald')} / ${cpu(rounds, 'fake')} / ${cpu(rounds, 'bench')}`,
            `${h.proc.peakRssMb()} (Herald process)`,
          ];
        }),
      ],
    );
    const effect = ref
      ? (() => {
          const [was, now] = heraldRounds as [Measured[], Measured[]];
          const paired = was.map((w, i) => now[i]!.rate / w.rate);
          const cpuRatios = was.map((w, i) => w.cpu.herald / now[i]!.cpu.herald);
          const perRound = (rounds: Measured[]) => rounds.map((r) => r.cpu.herald).join(', ');
          return [
            `Effect over ${ref.sha} (${ref.subject}): **${median(paired).toFixed(2)} in sends/s** (median of the per-round ratios ${paired.map((r) => r.toFixed(2)).join(', ')}),`,
            `**${median(cpuRatios).toFixed(2)} in Herald CPU per send** (before µs ÷ after µs per round: ${cpuRatios.map((r) => r.toFixed(2)).join(', ')}; above 1 = cheaper now);`,
            `Herald CPU µs per send by round: before ${perRound(was)}; after ${perRound(now)} (medians ${cpu(was, 'herald')} → ${cpu(now, 'herald')}).`,
          ].join(' ');
        })()
      : '';
    const cpus = os.cpus();
    /** Share of the machine's CPU time the three processes used during these rounds. */
    const busy = (rounds: Measured[]) =>
      Math.round(
        (100 * rounds.reduce((n, r) => n + r.cpuMs, 0)) / (rounds.reduce((n, r) => n + r.wallMs, 0) * cpus.length),
      );
    const body = [
      `Command: \`${commandLine('bench:push')}\` (${ROUNDS} round${ROUNDS === 1 ? '' : 's'} of ${SENDS} sends; ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${cpus.length} x ${cpus[0]?.model ?? 'cpu'}, 1-minute load average at start ${loadBefore.toFixed(1)}).`,
      '',
      `${SENDS} sends per round to the FCM stand-in (\`bin/herald fake-providers\`, its own process, HTTP/2 over TLS). Herald runs as \`npm start\` on the embedded SQLite default`,
      `(auth, validation, device lookup, OAuth token cache, quota bucket, delivery records, JSON answers); the raw loop only POSTs prepared FCM messages with the same concurrency.`,
      `The push floor is the raw loop plus the delivery records Herald writes for a direct push, in this process: a \`deliveries\` row per send, a request's ${BATCH} rows in one transaction once its sends have ended, in Herald's statements (64-row INSERTs), plain SQL through better-sqlite3 on a database made fresh for the run with Herald's schema, WAL with \`synchronous = NORMAL\` and checkpointer thread; it has no HTTP ingress, auth, validation, lookups, quota or retry bookkeeping.`,
      `Rounds are interleaved (raw, floor, ${ref ? 'Herald before, ' : ''}Herald, ...) after a warm-up of each.`,
      '',
      table,
      '',
      `**Target: direct push >= ${TARGET} of the push floor. Ratio Herald / floor: ${ratio.toFixed(2)} in sends/s**, **${cpuRatio.toFixed(2)} in CPU per send** (floor µs ÷ Herald µs, the bench client's CPU in the floor rounds against Herald's process; per round ${cpuRatios.map((r) => r.toFixed(2)).join(', ')}). Context: Herald / raw loop ${rawRatio.toFixed(2)} in sends/s.${effect ? `\n\n${effect}` : ''}`,
      '',
      `The stand-in accepted ${accepted} of the ${expected} measured sends (its counters). Herald, the stand-in and this client together used ${busy(rawRounds)}% of the machine's ${cpus.length} cores during the raw rounds, ${busy(floorRounds)}% during the floor's and ${busy(heraldRounds.at(-1)!)}% during Herald's; near 100% the box is CPU-bound and the ratio follows the CPU each path spends per send (the CPU column).`,
      '',
      "What the paths do (not measured here): the raw loop spends only its client's CPU; the floor adds the delivery records; Herald adds to those HTTP ingress, the batched target lookups, the OAuth/quota/retry bookkeeping and the JSON answer.",
    ].join('\n');
    // A before/after run is printed only: its result goes into the History table by hand.
    if (!ref && !process.argv.includes('--no-write')) writeBenchmarkSection('Push', body);
    if (!ref)
      recordSummary({
        path: `direct push, ${BATCH}-item requests, ${REQUESTS_IN_FLIGHT} in flight`,
        herald: `${Math.round(median(ours))} sends/s`,
        baseline: `push floor: ${Math.round(median(floor))} sends/s (raw HTTP/2 loop ${Math.round(median(raw))})`,
        ratio,
        cpuRatio,
        target: TARGET,
      });
    process.stdout.write(`${body}\n`);
  } finally {
    for (const h of heralds) await h.servers.stop();
    await floorDb.close();
    await fake.stop();
    ref?.remove();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
