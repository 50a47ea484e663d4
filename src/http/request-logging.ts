import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';

/**
 * One compact line per completed request instead of Fastify's two full ones: on a fast endpoint
 * the logging is a visible share of the request's cost. The incoming line stays at debug. The URL
 * goes to the logger as it came: the logger redacts every string of a line once (query strings
 * and userinfo may carry tokens; src/logger.ts), so it is not redacted here a second time.
 */
export class CompactRequestLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (!levelEnabled(request.log, 'debug')) return;
    request.log.debug({ method: request.method, url: request.url }, 'incoming request');
  }

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    // At `warn` (the benchmarks', and a busy server's) a successful request builds no log line at all.
    if (!error && !levelEnabled(reply.log, 'info')) return;
    const line = {
      method: request.method,
      url: request.url,
      statusCode: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 100) / 100,
    };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}

/** pino's level test; a logger without one logs everything. */
function levelEnabled(log: FastifyBaseLogger, level: 'info' | 'debug'): boolean {
  return (log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled?.(level) ?? true;
}
