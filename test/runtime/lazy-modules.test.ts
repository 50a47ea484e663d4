import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import { listeningUrl, REPO_ROOT } from '../helpers/processes.js';

const HOOK = path.join(REPO_ROOT, 'test', 'helpers', 'package-load-log.ts');
const scratch: string[] = [];
afterAll(() => scratch.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

/** `bin/herald serve` on `database`, logging the packages it loads to `log`; resolves once it listens. */
async function startServer(database: TestDatabase, log: string, extraEnv: Record<string, string> = {}) {
  const inherited = Object.entries(process.env).filter(([name]) => !/^(DATA_DIR|DATABASE_URL|PORT|HOST)$/.test(name));
  const server: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    [path.join(REPO_ROOT, 'bin', 'herald'), 'serve'],
    {
      cwd: REPO_ROOT,
      env: {
        ...Object.fromEntries(inherited),
        ...database.env,
        ...extraEnv,
        NODE_OPTIONS: `--import=${HOOK}`,
        PACKAGE_LOAD_LOG: log,
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
      },
      stdio: 'pipe',
    },
  );
  const url = await listeningUrl(server).url;
  const stop = async () => {
    server.kill('SIGTERM');
    await new Promise((resolve) => server.once('close', resolve));
  };
  return { url, stop };
}

const loaded = (log: string): string[] => fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);

describe.each(TEST_DIALECTS)('modules loaded on first use, on %s', (dialect) => {
  it('a server starts without the API reference UI or the Redis client, and /docs loads it on its first request', async () => {
    const database = await createTestDatabase(dialect);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-lazy-'));
    scratch.push(dir);
    const log = path.join(dir, 'packages.log');
    const { url, stop } = await startServer(database, log);
    try {
      // The log is live: what the server loaded to start (Fastify at least), and nothing only a route or setting needs.
      expect(loaded(log)).toContain('fastify');
      expect(loaded(log)).not.toContain('@scalar/fastify-api-reference');
      expect(loaded(log)).not.toContain('ioredis');

      const redirect = await fetch(`${url}/docs`, { redirect: 'manual' });
      expect(redirect.status).toBe(301);
      expect(redirect.headers.get('location')).toBe('/docs/');
      const page = await fetch(`${url}/docs/`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await page.text();
      expect(html).toContain('/openapi.json');
      const script = await fetch(`${url}/docs/js/scalar.js`);
      expect(script.status).toBe(200);
      expect(script.headers.get('content-type')).toMatch(/^application\/javascript/);
      expect((await script.text()).length).toBeGreaterThan(100_000);
      expect(loaded(log)).toContain('@scalar/fastify-api-reference');
      // The reference document and the guide are served as before.
      expect((await fetch(`${url}/openapi.json`)).status).toBe(200);
      expect((await fetch(`${url}/docs/a2a.md`)).status).toBe(200);
    } finally {
      await stop();
      await database.destroy();
    }
  });
});
