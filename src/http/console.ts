import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Where `npm run build` puts the console (console/build.ts). */
export const CONSOLE_DIST = fileURLToPath(new URL('../../dist/console/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.map': 'application/json',
};

/**
 * The console may only load its own files and call its own origin: no inline script or style, no
 * frames, no forms posting elsewhere. The secret key lives in the tab's session storage, so the one
 * thing an injected script could steal it with is what this policy forbids.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

interface StaticFile {
  body: Buffer;
  type: string;
  etag: string;
  /** Hashed names (`app-XXXX.js`) never change content: cached for a year. index.html is revalidated. */
  immutable: boolean;
}

/** Reads the built console once into memory; an empty map when it was never built. */
export function loadConsoleFiles(dir: string = CONSOLE_DIST): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  if (!fs.existsSync(path.join(dir, 'index.html'))) return files;
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    const name = path.relative(dir, full).split(path.sep).join('/');
    const body = fs.readFileSync(full);
    files.set(name, {
      body,
      type: TYPES[path.extname(name)] ?? 'application/octet-stream',
      etag: `"${crypto.createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
      immutable: /-[A-Z0-9]{8}\.(js|css)$/.test(name),
    });
  }
  return files;
}

const NOT_BUILT =
  'The Herald console is not built in this installation. Run `npm run build` (it writes dist/console) and restart Herald.\n';

/**
 * GET /console: the operator console, static files served from memory (no runtime dependency).
 * Client routes (`/console/users/alice`) answer index.html; unknown files with an extension are 404.
 */
export function registerConsole(app: FastifyInstance, files = loadConsoleFiles()): void {
  const send = (reply: FastifyReply, file: StaticFile, ifNoneMatch: string | undefined) => {
    reply
      .header('Content-Security-Policy', CONSOLE_CSP)
      .header('X-Content-Type-Options', 'nosniff')
      .header('Referrer-Policy', 'no-referrer')
      .header('X-Frame-Options', 'DENY')
      .header('Cache-Control', file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
      .header('ETag', file.etag)
      .type(file.type);
    if (ifNoneMatch === file.etag) return reply.code(304).send();
    return reply.send(file.body);
  };
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const index = files.get('index.html');
    if (!index)
      return reply.code(503).type('text/plain; charset=utf-8').header('Cache-Control', 'no-store').send(NOT_BUILT);
    const wanted = ((request.params as { '*'?: string })['*'] ?? '').replace(/^\/+/, '');
    const ifNoneMatch = request.headers['if-none-match'];
    const file = files.get(wanted);
    if (file) return send(reply, file, ifNoneMatch);
    // A path whose last segment has an extension names a file: a missing one is a 404, not the app.
    if (/\.[A-Za-z0-9]+$/.test(wanted)) return reply.code(404).type('text/plain; charset=utf-8').send('Not found\n');
    return send(reply, index, ifNoneMatch);
  };
  app.get('/console', { schema: { hide: true } }, handler);
  app.get('/console/*', { schema: { hide: true } }, handler);
}
