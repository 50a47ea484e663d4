import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CorsOrigins } from '../settings/cors-origins.js';
import { sendError } from './error-handler.js';

/** What a browser may send to the client routes, and may read from their answers. */
const ALLOWED_HEADERS =
  'Content-Type, Authorization, X-Service-Project-ID, X-Service-API-Key, X-Service-User-Token, X-Request-ID';
const EXPOSED_HEADERS =
  'X-Request-ID, X-Error-Reason, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset';
/** How long a browser may cache a preflight answer (seconds). */
const PREFLIGHT_MAX_AGE_S = 600;

/**
 * Cross-origin browser calls (CORS) to the client-SDK routes only (`auth: 'client'`: device
 * registration, event tracking, the VAPID public key, and the `browserCallable` preference-link API,
 * whose bearer token is no ambient credential either), so a web app on its own origin can use the
 * public key as `@herald/web` does. They carry no cookies or other ambient credentials, so allowing
 * any origin grants a page nothing a script with the public key lacks. Every other route sends no
 * CORS headers: browsers refuse to call them from another origin (the secret key stays server-side).
 * Register before the auth hook, so refusals (401, 429) carry the headers and the page can read them.
 */
export function registerClientCors(app: FastifyInstance, origins: CorsOrigins): void {
  const clientRoutes = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    if (route.config?.auth !== 'client' && route.config?.browserCallable !== true) return;
    const methods = clientRoutes.get(route.url) ?? new Set<string>();
    for (const method of [route.method].flat()) methods.add(method);
    clientRoutes.set(route.url, methods);
  });

  const allowedOrigin = (request: FastifyRequest): string | undefined => {
    const origin = request.headers.origin;
    if (typeof origin !== 'string') return undefined;
    if (origins === '*') return '*';
    return origins.includes(origin) ? origin : undefined;
  };
  const allowOrigin = (reply: FastifyReply, origin: string) => {
    reply.header('Access-Control-Allow-Origin', origin);
    if (origin !== '*') reply.header('Vary', 'Origin');
  };

  app.addHook('onRequest', (request, reply, done) => {
    const { auth, browserCallable } = request.routeOptions.config;
    const origin = auth === 'client' || browserCallable === true ? allowedOrigin(request) : undefined;
    if (origin) {
      allowOrigin(reply, origin);
      reply.header('Access-Control-Expose-Headers', EXPOSED_HEADERS);
    }
    done();
  });

  // Preflights: one route answers them for every path; paths that are not client routes get the usual 404.
  app.options('*', { schema: { hide: true } }, async (request, reply) => {
    const path = request.url.split('?')[0]!;
    const methods = clientRoutes.get(path);
    const wanted = request.headers['access-control-request-method'];
    if (!methods) return sendError(request, reply, { status: 404, message: 'Not found', reason: 'ROUTE_NOT_FOUND' });
    const origin = allowedOrigin(request);
    if (origin && typeof wanted === 'string' && methods.has(wanted.toUpperCase())) {
      allowOrigin(reply, origin);
      reply.header('Access-Control-Allow-Methods', [...methods].join(', '));
      reply.header('Access-Control-Allow-Headers', ALLOWED_HEADERS);
      reply.header('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE_S));
    }
    // Without the headers above the browser refuses the call; the answer itself is always an empty 204.
    return reply.code(204).send();
  });
}
