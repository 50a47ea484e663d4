import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from '../db/database-errors.js';
import { AppError, type ErrorKind } from '../errors.js';

const STATUS_BY_KIND: Record<ErrorKind, number> = {
  invalid: 400,
  unauthenticated: 401,
  not_found: 404,
  conflict: 409,
  refused: 400,
  forbidden: 403,
  rate_limited: 429,
  too_large: 413,
  // A statement timeout on a healthy database: the request asked for more than allowed, not an outage (docs/decisions.md).
  too_expensive: 422,
  unavailable: 503,
  internal: 500,
};

/** Seconds a client should wait before retrying when the database is unreachable. */
const DATABASE_RETRY_AFTER_SECONDS = 5;

interface Rendered {
  status: number;
  message: string;
  reason: string;
  retryAfterSeconds?: number | undefined;
}

/** Herald's own names for the framework's 4xx causes: no `FST_ERR_...` code reaches a response. */
const REASON_BY_FRAMEWORK_CODE: Record<string, string> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_BODY_TOO_LARGE: 'BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'INVALID_CONTENT_LENGTH',
  FST_ERR_CTP_INVALID_JSON_BODY: 'INVALID_JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'INVALID_JSON',
  FST_ERR_BAD_URL: 'INVALID_URL_ENCODING',
  FST_ERR_MAX_PARAM_LENGTH: 'PATH_PARAMETER_TOO_LONG',
  FST_ERR_ASYNC_CONSTRAINT: 'BAD_REQUEST',
};

export function publicReason(code: string | undefined): string {
  if (code === undefined || code === '') return 'BAD_REQUEST';
  return REASON_BY_FRAMEWORK_CODE[code] ?? (code.startsWith('FST_') ? 'BAD_REQUEST' : code);
}

/** Turns any thrown value into a status, a message safe to show, and a stable reason code. */
export function renderError(error: unknown): Rendered {
  if (error instanceof AppError) {
    return {
      status: STATUS_BY_KIND[error.kind],
      message: error.message,
      reason: error.code,
      retryAfterSeconds: error.retryAfterSeconds,
    };
  }
  const fastifyError = error as Partial<FastifyError> & { validation?: unknown };
  if (fastifyError.validation) {
    return {
      status: 400,
      message: `Invalid request: ${fastifyError.message ?? 'validation failed'}`,
      reason: 'VALIDATION_FAILED',
    };
  }
  if (isDatabaseUnavailable(error)) {
    return {
      status: 503,
      message: 'Database unavailable, retry later',
      reason: 'DATABASE_UNAVAILABLE',
      retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS,
    };
  }
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return { status, message: fastifyError.message ?? 'Bad request', reason: publicReason(fastifyError.code) };
  }
  return { status: 500, message: 'Internal server error', reason: 'INTERNAL' };
}

/**
 * One error handler for REST (rule `error-bodies`): the fixed 400s answer `text/plain` with the route's
 * fixed message and the cause in `X-Error-Reason`; everything else answers JSON `{"error"}`.
 * 5xx bodies never carry internal text.
 */
export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const rendered = renderError(error);
    if (rendered.status >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.info({ reason: rendered.reason, status: rendered.status }, rendered.message);
    sendError(request, reply, rendered);
  });
}

/** `plainText400` defaults to the route's own (`config.plainText400`). */
export function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  rendered: Rendered,
  plainText400 = request.routeOptions.config?.plainText400,
): FastifyReply {
  if (rendered.retryAfterSeconds !== undefined)
    reply.header('Retry-After', String(Math.max(1, Math.ceil(rendered.retryAfterSeconds))));
  reply.header('X-Error-Reason', rendered.reason);
  const plain = plainText400;
  if (rendered.status === 400 && plain !== undefined) {
    return reply.code(400).type('text/plain; charset=utf-8').send(plain);
  }
  return reply.code(rendered.status).type('application/json; charset=utf-8').send({ error: rendered.message });
}
