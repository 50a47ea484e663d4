import type { FastifyInstance } from 'fastify';

/**
 * Rule `request-limits`: a request still unanswered after the limit gets 503 `{"error":"Request timed out"}`. The
 * handler's own late answer is then dropped by Fastify (the reply is already sent).
 */
export function registerRequestTimeout(app: FastifyInstance, timeoutMs: number): void {
  app.addHook('onRequest', (request, reply, done) => {
    const timer = setTimeout(() => {
      if (reply.sent || reply.raw.headersSent) return;
      request.log.warn({ timeoutMs }, 'request timed out');
      void reply
        .code(503)
        .header('Retry-After', '1')
        .header('X-Error-Reason', 'REQUEST_TIMEOUT')
        .type('application/json; charset=utf-8')
        .send({ error: 'Request timed out' });
    }, timeoutMs);
    timer.unref();
    reply.raw.once('close', () => clearTimeout(timer));
    done();
  });
}
