import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { redactUrl } from '../lib/redact.js';

/**
 * One compact line per completed request instead of Fastify's two full ones: on a fast endpoint
 * the logging is a visible share of the request's cost. The incoming line stays at debug. Query
 * strings are redacted (they may carry tokens).
 */
export class CompactRequestLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ method: request.method, url: redactUrl(request.url) }, 'incoming request');
  }

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    const line = {
      method: request.method,
      url: redactUrl(request.url),
      statusCode: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 100) / 100,
    };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}
