import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
}

/** A registry per app instance (no global default registry), so tests and apps never share counters. */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'herald_' });
  return {
    registry,
    httpRequests: new Counter({
      name: 'herald_http_requests_total',
      help: 'HTTP requests by route and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: 'herald_http_request_duration_seconds',
      help: 'HTTP request latency by route and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [registry],
    }),
  };
}

/** Counts every request the app answers, by route pattern and status. */
export function registerRequestMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', (request, reply, done) => {
    // The route pattern, never the raw URL, keeps label cardinality bounded.
    const labels = {
      method: request.method,
      // A custom method's escaped colon (`/api/v1/messages::send`) is labelled as it is called.
      route: request.routeOptions.url?.replaceAll('::', ':') ?? 'unmatched',
      status: String(reply.statusCode),
    };
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
    done();
  });
}

/**
 * `GET /metrics` (Prometheus text). With a token (`METRICS_TOKEN`) it answers only
 * `Authorization: Bearer <token>`, compared in constant time; without one, only where the server
 * is a port of its own (`METRICS_PORT`, the worker's `WORKER_METRICS_PORT`), kept off the public
 * network by the operator.
 */
export function registerMetricsRoute(app: FastifyInstance, metrics: Metrics, token: string | undefined): void {
  const expected = token === undefined ? undefined : digest(token);
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (expected !== undefined && !bearerMatches(request, expected))
      return reply
        .code(401)
        .header('WWW-Authenticate', 'Bearer realm="metrics"')
        .header('X-Error-Reason', 'UNAUTHENTICATED')
        .send({ error: 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>' });
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}

/** The API port's `/metrics` when neither METRICS_TOKEN nor METRICS_PORT is set: a 404 that says how to turn it on. */
export function registerMetricsNotServed(app: FastifyInstance): void {
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) =>
    reply.code(404).header('X-Error-Reason', 'METRICS_NOT_SERVED').send({
      error:
        'Metrics are not served on this port: set METRICS_TOKEN to scrape them here with a bearer token, or METRICS_PORT to serve them on a port of their own',
    }),
  );
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/** `Authorization: Bearer <token>` naming `expected` (a digest, so the comparison takes the same time whatever was sent). */
function bearerMatches(request: FastifyRequest, expected: Buffer): boolean {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return false;
  const space = header.indexOf(' ');
  if (space < 0 || header.slice(0, space).toLowerCase() !== 'bearer') return false;
  return timingSafeEqual(digest(header.slice(space + 1).trim()), expected);
}
