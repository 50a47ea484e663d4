import Fastify from 'fastify';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP, loadConsoleFiles, registerConsole } from '../../src/http/console.js';

// Serving the built console (dist/console) from memory: strict CSP, cache headers by file kind,
// index.html for client routes, 404 for missing files, and a clear answer when it was never built.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-console-dist-'));
fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><script src="/console/app-ABCDEFGH.js"></script>');
fs.writeFileSync(path.join(dir, 'app-ABCDEFGH.js'), 'console.log(1)');
fs.writeFileSync(path.join(dir, 'favicon.svg'), '<svg/>');
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function appWith(files: ReturnType<typeof loadConsoleFiles>) {
  const app = Fastify();
  registerConsole(app, files);
  await app.ready();
  return app;
}

describe('console static files', () => {
  it('answers index.html at /console, /console/ and every client route, revalidated, with the CSP', async () => {
    const app = await appWith(loadConsoleFiles(dir));
    for (const url of ['/console', '/console/', '/console/users/alice', '/console/campaigns/c1/triggers/t1?x=1']) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.body).toContain('app-ABCDEFGH.js');
    }
    expect(CONSOLE_CSP).toMatch(/default-src 'none'/);
    expect(CONSOLE_CSP).not.toMatch(/unsafe/);
  });

  it('caches hashed assets for a year and others by ETag', async () => {
    const app = await appWith(loadConsoleFiles(dir));
    const js = await app.inject({ method: 'GET', url: '/console/app-ABCDEFGH.js' });
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(js.body).toBe('console.log(1)');
    const svg = await app.inject({ method: 'GET', url: '/console/favicon.svg' });
    expect(svg.headers['cache-control']).toBe('no-cache');
    const again = await app.inject({
      method: 'GET',
      url: '/console/favicon.svg',
      headers: { 'if-none-match': String(svg.headers.etag) },
    });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
  });

  it('answers 404 for a missing file, never the app, and never reads outside its directory', async () => {
    const app = await appWith(loadConsoleFiles(dir));
    expect((await app.inject({ method: 'GET', url: '/console/app-OTHER.js' })).statusCode).toBe(404);
    const escape = await app.inject({ method: 'GET', url: '/console/..%2f..%2fpackage.json' });
    expect(escape.statusCode).toBe(404);
    expect(escape.body).not.toContain('"name"');
  });

  it('says how to build it when dist/console is missing', async () => {
    const app = await appWith(loadConsoleFiles(path.join(dir, 'nowhere')));
    for (const url of ['/console', '/console/users']) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(503);
      expect(res.body).toMatch(/not built.*npm run build/);
    }
  });
});
