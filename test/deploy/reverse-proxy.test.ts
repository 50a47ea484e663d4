import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/processes.js';
import { freePort } from '../helpers/ports.js';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';

// deploy/caddy/Caddyfile as shipped, run by Debian's Caddy (`apt-get install caddy`, CI installs it)
// in front of a real API process and a real worker process: HTTPS to the API, the worker's health
// and metrics under /worker/, plain HTTP redirected.

const CADDYFILE = path.join(REPO_ROOT, 'deploy', 'caddy', 'Caddyfile');

function start(command: string, args: string[], env: Record<string, string>, cwd: string): ChildProcess {
  const child = spawn(command, args, { cwd, env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'ignore' });
  return child;
}

describe.each(TEST_DIALECTS)('the TLS reverse proxy of deploy/ in front of Herald on %s', (dialect) => {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-proxy-'));
  const children: ChildProcess[] = [];
  let database: TestDatabase;
  let httpsPort: number;
  let httpPort: number;
  let ca: string;

  /** A request through the proxy, as a client reaching `localhost` would send it. */
  const request = (method: string, url: string, headers: Record<string, string> = {}, body?: string) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
      const req = https.request(
        {
          hostname: '127.0.0.1',
          port: httpsPort,
          servername: 'localhost',
          path: url,
          method,
          ca,
          headers: { host: `localhost:${httpsPort}`, ...headers },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    const [apiPort, workerPort] = [await freePort(), await freePort()];
    [httpsPort, httpPort] = [await freePort(), await freePort()];
    const herald = path.join(REPO_ROOT, 'bin', 'herald');
    const common = {
      ...database.env,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      BEHIND_TLS_PROXY: 'true',
      XDG_CACHE_HOME: scratch,
    };
    children.push(start(process.execPath, [herald, 'api'], { ...common, PORT: String(apiPort) }, scratch));
    children.push(
      start(process.execPath, [herald, 'worker'], { ...common, WORKER_METRICS_PORT: String(workerPort) }, scratch),
    );
    children.push(
      start(
        'caddy',
        ['run', '--config', CADDYFILE, '--adapter', 'caddyfile'],
        {
          HOME: scratch,
          XDG_DATA_HOME: scratch,
          XDG_CONFIG_HOME: scratch,
          HERALD_DOMAIN: 'localhost',
          HERALD_API: `127.0.0.1:${apiPort}`,
          HERALD_WORKER: `127.0.0.1:${workerPort}`,
          HTTPS_PORT: String(httpsPort),
          HTTP_PORT: String(httpPort),
        },
        scratch,
      ),
    );
    // Caddy writes its local CA at start: read it again until a request through it succeeds.
    const root = path.join(scratch, 'caddy', 'pki', 'authorities', 'local', 'root.crt');
    await waitFor(
      async () => {
        ca = fs.readFileSync(root, 'utf8');
        return (await request('GET', '/readyz')).status === 200;
      },
      { what: 'Herald through Caddy', timeoutMs: 60_000, intervalMs: 200 },
    );
  }, 120_000);

  afterAll(async () => {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(
      children.map((c) => new Promise((resolve) => (c.exitCode !== null ? resolve(null) : c.once('exit', resolve)))),
    );
    await database?.destroy();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('serves the API over HTTPS with the keys in the headers', async () => {
    const { createProject } = await import('../../src/projects/projects.service.js');
    const { systemClock } = await import('../../src/lib/clock.js');
    const project = await createProject(database.db, systemClock, 'behind-proxy');
    const headers = {
      'x-service-project-id': project.project_id,
      'x-service-api-key': project.secret_key,
      'content-type': 'application/json',
    };
    const created = await request(
      'POST',
      '/api/v1/users',
      headers,
      JSON.stringify({ project_user_id: 'p1', properties: { a: 1 } }),
    );
    expect(created.status, created.body).toBe(200);
    const read = await request('GET', '/api/v1/users/p1', headers);
    expect(read.status).toBe(200);
    expect(JSON.parse(read.body)).toMatchObject({ project_user_id: 'p1', properties: { a: 1 } });
  });

  it("passes on the worker's health and metrics under /worker/ (from this private network)", async () => {
    expect((await request('GET', '/worker/healthz')).status).toBe(200);
    const metrics = await request('GET', '/worker/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain('herald_jobs');
  });

  it('redirects plain HTTP to HTTPS', async () => {
    const answer = await new Promise<http.IncomingMessage>((resolve, reject) =>
      http
        .get({ hostname: '127.0.0.1', port: httpPort, path: '/healthz', headers: { host: 'localhost' } }, resolve)
        .on('error', reject),
    );
    answer.resume();
    expect(answer.statusCode).toBe(308);
    // (Caddy 2.6 names no port in the redirect: right on 443, the port of a real deployment.)
    const location = new URL(answer.headers.location ?? '');
    expect([location.protocol, location.hostname, location.pathname]).toEqual(['https:', 'localhost', '/healthz']);
  });
});
