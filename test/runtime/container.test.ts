import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { validate } from 'dockerfile-utils';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config.js';
import { startRuntime } from '../../src/runtime.js';
import { REPO_ROOT } from '../helpers/processes.js';
import { freePort } from '../helpers/ports.js';
import { createTestDatabase } from '../helpers/test-db.js';

// No container engine runs in CI here: these check that the Dockerfile and compose.yaml parse and
// hold what the README promises. Building and starting them is left to a machine with Docker.

const read = (file: string) => fs.readFileSync(path.join(REPO_ROOT, file), 'utf8');

/** Dockerfile instructions with line continuations joined and comments dropped. */
function instructions(text: string): { keyword: string; args: string }[] {
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  return lines
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [keyword = '', ...rest] = line.split(/\s+/);
      return { keyword: keyword.toUpperCase(), args: rest.join(' ') };
    });
}

interface ComposeService {
  build?: string;
  image?: string;
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] | string };
}

describe('Dockerfile', () => {
  const text = read('Dockerfile');
  const all = instructions(text);

  it('is valid Dockerfile syntax (dockerfile-utils finds no problem)', () => {
    expect(validate(text)).toEqual([]);
  });

  it('is multi-stage: production dependencies and the web console built in their own stages, copied into a slim runtime stage', () => {
    const froms = all.filter((i) => i.keyword === 'FROM');
    expect(froms.map((f) => f.args)).toEqual([
      'node:${NODE_VERSION}-bookworm-slim AS deps',
      'node:${NODE_VERSION}-bookworm-slim AS console',
      'node:${NODE_VERSION}-bookworm-slim AS runtime',
    ]);
    expect(all.some((i) => i.keyword === 'COPY' && i.args === '--from=console /app/dist/console ./dist/console')).toBe(
      true,
    );
    expect(all.find((i) => i.keyword === 'ARG')?.args).toBe(`NODE_VERSION=${read('.nvmrc').trim()}`);
    expect(all.some((i) => i.keyword === 'RUN' && i.args.includes('npm ci --omit=dev'))).toBe(true);
    expect(all.some((i) => i.keyword === 'COPY' && i.args === '--from=deps /app/node_modules ./node_modules')).toBe(
      true,
    );
  });

  it('runs as a non-root user with a data volume, a health check and the production start command', () => {
    const runtime = all.slice(all.findLastIndex((i) => i.keyword === 'FROM'));
    const user = runtime.filter((i) => i.keyword === 'USER').at(-1)?.args;
    expect(user).toBeDefined();
    expect(['root', '0']).not.toContain(user);
    expect(runtime.find((i) => i.keyword === 'VOLUME')?.args).toBe('["/data"]');
    expect(runtime.find((i) => i.keyword === 'ENV')?.args).toContain('DATA_DIR=/data');
    expect(runtime.find((i) => i.keyword === 'HEALTHCHECK')?.args).toMatch(/CMD \["node", "bin\/healthcheck"\]$/);
    const cmd = JSON.parse(runtime.find((i) => i.keyword === 'CMD')!.args) as string[];
    const start = JSON.parse(read('package.json')).scripts.start as string;
    expect(cmd.join(' ')).toBe(start);
  });

  it('copies only files that exist and that .dockerignore lets through', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .filter((l) => l.trim() !== '');
    const sources = all
      .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'))
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    expect(sources).toEqual([
      ...['package.json', 'package-lock.json'],
      ...['package.json', 'package-lock.json', 'packages', 'console'],
      ...['package.json', 'package-lock.json', 'bin', 'src'],
      'docs/a2a.md', // served at /docs/a2a.md
    ]);
    for (const source of sources) {
      expect(fs.existsSync(path.join(REPO_ROOT, source))).toBe(true);
      expect(ignored).not.toContain(source);
      // A file inside an ignored folder is let through by a `!` line.
      if (ignored.includes(source.split('/')[0]!) && source.includes('/')) expect(ignored).toContain(`!${source}`);
    }
    // What must never reach the image (or the build context).
    for (const secret of ['node_modules', 'data', '.env', '.git']) expect(ignored).toContain(secret);
  });
});

describe('compose.yaml', () => {
  const compose = parse(read('compose.yaml'), { merge: true }) as {
    services: Record<string, ComposeService>;
    volumes: Record<string, unknown>;
  };
  const { api, worker, postgres, redis } = compose.services;
  const documented = new Set([...read('.env.example').matchAll(/^#?\s*([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]));

  it('has the API, a separate worker, PostgreSQL and Redis', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'postgres', 'proxy', 'redis', 'worker']);
    for (const herald of [api, worker]) {
      expect(herald!.build).toBe('.');
      expect(herald!.image).toBe('herald:local');
      expect(herald!.environment!.DATABASE_URL).toBe('postgres://herald:herald@postgres:5432/herald');
      expect(herald!.environment!.REDIS_URL).toBe('redis://redis:6379');
      expect(herald!.volumes).toEqual(['herald-data:/data']);
      // Every variable given to Herald is one it knows (documented in .env.example).
      for (const name of Object.keys(herald!.environment!)) expect(documented).toContain(name);
    }
    expect(api!.environment!.HERALD_ROLE).toBe('api');
    expect(worker!.environment!.HERALD_ROLE).toBe('worker');
    // Only the proxy is published beyond this machine; Herald's plain HTTP stays on loopback.
    expect(api!.ports).toEqual(['127.0.0.1:${HERALD_PORT:-8080}:8080']);
    expect(worker!.ports).toEqual(['127.0.0.1:${HERALD_WORKER_METRICS_PORT:-9464}:9464']);
    expect(api!.environment!.BEHIND_TLS_PROXY).toBe('true');
    expect(Object.keys(compose.volumes).sort()).toEqual(['caddy-data', 'herald-data', 'postgres-data']);
  });

  it("puts deploy/'s TLS proxy (Caddy) in front of the API and the worker, once the API is healthy", () => {
    const { proxy } = compose.services;
    expect(proxy!.image).toMatch(/^caddy:2/);
    expect(proxy!.volumes).toContain('./deploy/caddy/Caddyfile:/etc/caddy/Caddyfile:ro');
    expect(fs.existsSync(path.join(REPO_ROOT, 'deploy', 'caddy', 'Caddyfile'))).toBe(true);
    expect(proxy!.environment).toMatchObject({ HERALD_API: 'api:8080', HERALD_WORKER: 'worker:9464' });
    expect(proxy!.ports).toEqual(['${HERALD_HTTPS_PORT:-443}:443', '${HERALD_HTTP_PORT:-80}:80']);
    expect(proxy!.depends_on).toEqual({ api: { condition: 'service_healthy' } });
  });

  it('starts in order with one command: Herald waits for healthy PostgreSQL and Redis', () => {
    expect(api!.depends_on).toEqual({
      postgres: { condition: 'service_healthy' },
      redis: { condition: 'service_healthy' },
    });
    expect(worker!.depends_on).toEqual({
      api: { condition: 'service_healthy' },
      redis: { condition: 'service_healthy' },
    });
    expect(postgres!.healthcheck?.test).toEqual(['CMD-SHELL', 'pg_isready -U herald -d herald']);
    expect(redis!.healthcheck?.test).toEqual(['CMD', 'redis-cli', 'ping']);
  });

  it('builds a configuration Herald accepts for both roles', () => {
    for (const herald of [api, worker]) {
      const env = Object.fromEntries(
        Object.entries(herald!.environment!).map(([k, v]) => [k, v.replace(/\$\{\w+:-([^}]*)\}/g, '$1')]),
      );
      expect(() => loadConfig(env)).not.toThrow();
    }
  });
});

describe('bin/healthcheck (the image HEALTHCHECK)', () => {
  const probe = (env: Record<string, string>) =>
    new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, [path.join(REPO_ROOT, 'bin', 'healthcheck')], {
        env: { PATH: process.env.PATH ?? '', ...env },
        stdio: 'ignore',
      });
      child.on('close', resolve);
    });

  it('exits 0 when the API (or the worker, by role) answers /healthz, 1 when nothing listens', async () => {
    const database = await createTestDatabase('sqlite');
    const [apiPort, workerPort, unusedPort] = [await freePort(), await freePort(), await freePort()];
    const silent = pino({ level: 'silent' });
    const api = await startRuntime(
      loadConfig({ ...database.env, HERALD_ROLE: 'api', HOST: '127.0.0.1', PORT: String(apiPort) }),
      { logger: silent },
    );
    const worker = await startRuntime(
      loadConfig({
        ...database.env,
        HERALD_ROLE: 'worker',
        HOST: '127.0.0.1',
        WORKER_METRICS_PORT: String(workerPort),
      }),
      { logger: silent },
    );
    try {
      expect(await probe({ PORT: String(apiPort) })).toBe(0);
      expect(await probe({ HERALD_ROLE: 'worker', WORKER_METRICS_PORT: String(workerPort) })).toBe(0);
      // A worker is probed on its own port, never on PORT (where the API may answer).
      expect(
        await probe({ HERALD_ROLE: 'worker', WORKER_METRICS_PORT: String(unusedPort), PORT: String(apiPort) }),
      ).toBe(1);
    } finally {
      await Promise.all([api.stop(), worker.stop()]);
      await database.destroy();
    }
    expect(await probe({ PORT: String(apiPort) })).toBe(1);
  });
});
