import fs from 'node:fs';
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/lib/clock.js';
import { createProject, type CreatedProject } from '../../src/projects/projects.service.js';
import { startServerProcess, stopServerProcess, type ServerProcess } from '../helpers/processes.js';
import { percentile } from '../helpers/latency.js';
import { freePort } from '../helpers/ports.js';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * No request may cost the event loop more than a linear pass over its input (docs/security.md).
 * A real Herald process, logging every request at `info` as in production, takes 4 clients
 * looping requests built to be worst cases for every regular expression and scan on the request
 * path (the log redaction, routing and path parameters, validation patterns, header parsing);
 * meanwhile `/healthz` must answer within 50 ms at the 99th percentile, and the server's CPU per
 * request must stay a few ms. Before the redaction was a scan, the first of these URLs cost about
 * 0.5 s of main-thread time each, after the answer: /healthz p99 was over a second.
 */
const ATTACKERS = 4;
const ATTACK_MS = 4000;
const WINDOWS = 3;
const P99_LIMIT_MS = 50;
/** Server CPU per attack request (0.5-1 ms measured; the old redaction averaged over 100 ms). */
const CPU_MS_PER_REQUEST_LIMIT = 10;
/** A 16 KB request line stays under Node's 16 KiB header limit with the headers these requests carry. */
const URL_LENGTH = 15_900;
const HEADER_LENGTH = 15_000;
/** Linux's USER_HZ, the unit of /proc/<pid>/stat's times, 100 on every architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

const fill = (unit: string, length = URL_LENGTH): string =>
  unit.repeat(Math.ceil(length / unit.length)).slice(0, length);

interface Attack {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

function attacks(project: CreatedProject): Attack[] {
  const secret = { 'x-service-project-id': project.project_id, 'x-service-api-key': project.secret_key };
  const publicKey = { 'x-service-project-id': project.project_id, 'x-service-api-key': project.public_key };
  const json = { ...secret, 'content-type': 'application/json' };
  const a2a = { 'x-api-key': project.secret_key, 'content-type': 'application/json', 'a2a-version': '1.0' };
  const rpc = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'nope' } });
  return [
    // The log redaction: URL userinfo, query strings and keys, in every shape that made a regex backtrack.
    { path: `/${fill('/')}@` },
    { path: fill('/a@') },
    { path: `/${fill('?')}` },
    { path: `/x?${fill('/?')}` },
    { path: `/${fill('svc_sk_')}` },
    { path: `/${fill('a://')}@` },
    { path: `/${fill('a')}@` },
    { path: `/${fill('a:/')}?` },
    { path: `http://${fill(':')}@h/` },
    { path: `http://h/${fill('//x:')}` },
    // Routing, path parameters and their validation on real routes, authenticated.
    { path: `/api/v1/users/${fill('a', 4000)}`, headers: secret },
    { path: `/api/v1/users/${fill('a')}`, headers: secret },
    { path: `/api/v1/users/${fill('%e2%82%ac', 4095)}`, headers: secret },
    { path: `/api/v1/users/${fill('%')}`, headers: secret },
    { path: `/api/v1/users/${fill('a', 4000)}/devices`, headers: secret },
    { path: `/api/v1/users/${fill('a', 4000)}/events?limit=${fill('9', 4000)}`, headers: secret },
    { path: `/api/v1/users?limit=${fill('1', 8000)}&cursor=${fill('=', 7000)}`, headers: secret },
    { method: 'POST', path: `/api/v1/campaigns/${fill(':trigger', 4000)}:trigger`, headers: json, body: '{}' },
    { method: 'POST', path: `/api/v1/webhooks/wh_${fill('a', 64)}:rotate-secret`, headers: json, body: '{}' },
    { method: 'POST', path: `/api/v1/webhooks/wh_${fill('a', 4000)}:rotate-secret`, headers: json, body: '{}' },
    { path: `/api/v1/campaigns/${fill('a', 4000)}/triggers/${fill('b', 4000)}/analytics`, headers: secret },
    { method: 'DELETE', path: `/api/v1/devices/${fill('!', 4000)}`, headers: secret },
    { path: `/console/${fill('.a')}/` },
    { path: `/console/${fill('/')}` },
    // Headers: request id, keys, the A2A version and content type, ETags, CORS.
    { path: '/api/v1/users/x', headers: { 'x-request-id': fill('!', HEADER_LENGTH) } },
    { path: '/api/v1/users/x', headers: { authorization: `Bearer ${fill('svc_sk_', HEADER_LENGTH)}` } },
    {
      path: '/api/v1/users/x',
      headers: { 'x-service-project-id': fill('a', 7000), 'x-service-api-key': fill('svc_sk_', 7000) },
    },
    { method: 'POST', path: '/a2a', headers: { ...a2a, 'a2a-version': fill('1.', HEADER_LENGTH) }, body: rpc },
    { method: 'POST', path: `/a2a?A2A-Version=${fill('1.')}`, headers: { ...a2a, 'a2a-version': '' }, body: rpc },
    {
      method: 'POST',
      path: '/a2a',
      headers: { ...a2a, 'content-type': `application/json${fill(' ', HEADER_LENGTH)}x` },
      body: rpc,
    },
    { path: '/metrics', headers: { authorization: `Bearer ${fill('svc_sk_', HEADER_LENGTH)}` } },
    { path: '/.well-known/agent-card.json', headers: { 'if-none-match': fill('W/"x",', HEADER_LENGTH) } },
    {
      method: 'OPTIONS',
      path: '/api/v1/devices',
      headers: { origin: `https://${fill('a.', HEADER_LENGTH)}`, 'access-control-request-method': 'POST' },
    },
    // A body's strings against the event name and timestamp patterns.
    {
      method: 'POST',
      path: '/api/v1/events',
      headers: { ...publicKey, 'content-type': 'application/json' },
      body: JSON.stringify({
        project_user_id: fill('u', 255),
        name: fill('e', 4000),
        timestamp: `2020-01-01T${fill('1', 8000)}`,
      }),
    },
  ];
}

function send(agent: http.Agent, port: number, attack: Attack): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: '127.0.0.1',
        port,
        method: attack.method ?? 'GET',
        path: attack.path,
        headers: {
          ...attack.headers,
          ...(attack.body === undefined ? {} : { 'content-length': Buffer.byteLength(attack.body) }),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end(attack.body);
  });
}

/** `/healthz` answered back to back for `ms`: each one's round trip, in ms. */
async function probeFor(agent: http.Agent, port: number, ms: number): Promise<number[]> {
  const samples: number[] = [];
  const deadline = performance.now() + ms;
  while (performance.now() < deadline) {
    const start = performance.now();
    const status = await send(agent, port, { path: '/healthz' });
    samples.push(performance.now() - start);
    if (status !== 200) throw new Error(`/healthz answered ${status}`);
  }
  return samples;
}

/** CPU time (user + system) a process has used, from /proc; undefined where there is no /proc. */
function cpuMsOf(pid: number): number | undefined {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Fields after the command name: state is the first; utime and stime are the 12th and 13th, in clock ticks.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
}

describe.each(TEST_DIALECTS)('hostile requests against a listening Herald on %s', (dialect) => {
  let server: ServerProcess | undefined;
  let database: TestDatabase | undefined;

  afterEach(async () => {
    await stopServerProcess(server);
    await database?.destroy();
  });

  it(`keeps /healthz under ${P99_LIMIT_MS} ms at p99 while ${ATTACKERS} clients send worst-case 16 KB requests`, async () => {
    database = await createTestDatabase(dialect);
    const project = await createProject(database.db, systemClock, 'attack');
    const port = await freePort();
    server = startServerProcess(
      {
        ...database.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        // `/metrics` on the API port, behind its bearer token: one attack sends a 15 KB one.
        METRICS_TOKEN: 'attack-test-metrics-token',
        // Authenticated attacks reach validation instead of a 429.
        RATE_LIMIT_DEFAULTS: 'management=1000000,client=1000000,send=1000000,trigger=1000000,a2a=1000000',
      },
      { discardStdout: true },
    );
    const probeAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    await waitFor(async () => (await send(probeAgent, port, { path: '/healthz' })) === 200, {
      timeoutMs: 30_000,
      what: 'the server to listen',
    });

    const list = attacks(project);
    // Each stays under the header limit, so it reaches Herald rather than Node's 431.
    for (const attack of list) {
      const headers = Object.entries(attack.headers ?? {}).reduce((n, [k, v]) => n + k.length + v.length + 4, 0);
      expect(attack.path.length + headers, attack.path.slice(0, 40)).toBeLessThan(16_200);
    }
    const agents = Array.from({ length: ATTACKERS }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
    // One pass of every attack first: what is compiled on first use is not what is measured.
    for (const attack of list) await send(agents[0]!, port, attack);
    // The same probes without the attack, for the failure message: what this machine gives anyway.
    const quiet = await probeFor(probeAgent, port, 1000);

    // Up to three windows: a machine busy with other work can spoil one window's tail, while a
    // request that blocks the event loop spoils every window (the old redaction: p50 over 400 ms).
    const answers: number[][] = list.map(() => []);
    const windows: Array<{ samples: number[]; sent: number; cpuMs: number | undefined }> = [];
    for (let w = 0; w < WINDOWS; w++) {
      let attacking = true;
      let sent = 0;
      const cpuBefore = cpuMsOf(server.child.pid!);
      const attackers = agents.map(async (agent, a) => {
        for (let i = a + w; attacking; i++) {
          const which = i % list.length;
          answers[which]!.push(await send(agent, port, list[which]!));
          sent++;
        }
      });
      const samples = await probeFor(probeAgent, port, ATTACK_MS);
      attacking = false;
      await Promise.all(attackers);
      const cpuAfter = cpuMsOf(server.child.pid!);
      windows.push({ samples, sent, cpuMs: cpuAfter === undefined ? undefined : cpuAfter - cpuBefore! });
      if (percentile(samples, 99) < P99_LIMIT_MS) break;
    }
    for (const agent of [probeAgent, ...agents]) agent.destroy();

    const summary = [
      ...windows.map(
        ({ samples, sent, cpuMs }, w) =>
          `window ${w + 1}: ${samples.length} probes, p50 ${percentile(samples, 50).toFixed(1)} ms, ` +
          `p99 ${percentile(samples, 99).toFixed(1)} ms, max ${Math.max(...samples).toFixed(1)} ms; ` +
          `${sent} attack requests of ${list.length} kinds${cpuMs === undefined ? '' : `, server CPU ${(cpuMs / sent).toFixed(2)} ms each`}`,
      ),
      `without attack: ${quiet.length} probes, p99 ${percentile(quiet, 99).toFixed(1)} ms`,
    ].join('; ');
    console.log(`[${dialect}] ${summary}`);
    const best = windows.at(-1)!;
    expect(percentile(best.samples, 99), summary).toBeLessThan(P99_LIMIT_MS);
    expect(best.samples.length, summary).toBeGreaterThanOrEqual(200);
    // The attack ran all along, and no request cost more than a few ms of the server's CPU (where
    // /proc tells it): machine load delays the probes, never this figure.
    for (const { sent, cpuMs } of windows) {
      expect(sent, summary).toBeGreaterThan(list.length * 4);
      if (cpuMs !== undefined) expect(cpuMs / sent, summary).toBeLessThan(CPU_MS_PER_REQUEST_LIMIT);
    }
    // Every hostile request was answered as the client's fault (the console's 503 says only that
    // it is not built in this checkout).
    list.forEach((attack, i) => {
      const allowed = attack.path.startsWith('/console/') ? [200, 404, 503] : undefined;
      for (const status of new Set(answers[i]))
        if (allowed) expect(allowed, attack.path.slice(0, 60)).toContain(status);
        else expect(status, `${attack.method ?? 'GET'} ${attack.path.slice(0, 60)}`).toBeLessThan(500);
    });
  });
});
