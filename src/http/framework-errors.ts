import type { FastifyError, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { renderError, sendError } from './error-handler.js';
import { routePathPattern } from './route-paths.js';

/**
 * Longest path parameter the router accepts (find-my-way's `maxParamLength`). A 255-character
 * `project_user_id` of 4-byte characters, percent-encoded, is 3,060 characters; longer ones are
 * answered here rather than by the route.
 */
export const MAX_PATH_PARAM_LENGTH = 4096;

interface PlainTextRoute {
  methods: string[];
  path: RegExp;
  message: string;
}

/**
 * Errors Fastify raises before a route is found (a path that is not valid percent-encoding, a path
 * parameter over the router's limit) skip the hooks and the error handler. This answers them like
 * every other error: `X-Request-ID`, `X-Error-Reason`, JSON `{"error"}`, and the route's plain-text
 * 400 (rules `error-bodies` and `user-id`) when the path would have reached a route that has one,
 * since such a path carries a missing or invalid id.
 */
export function createFrameworkErrorHandler(): {
  onRoute: (route: RouteOptions) => void;
  handle: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void;
} {
  const plainTextRoutes: PlainTextRoute[] = [];
  return {
    onRoute(route) {
      const message = route.config?.plainText400;
      if (message === undefined) return;
      plainTextRoutes.push({
        methods: [route.method].flat().map((m) => m.toUpperCase()),
        path: routePathPattern(route.url),
        message,
      });
    },
    handle(error, request, reply) {
      reply.header('X-Request-ID', request.id);
      const path = (request.raw.url ?? '').split('?')[0]!;
      const plain = plainTextRoutes.find((r) => r.methods.includes(request.method) && r.path.test(path))?.message;
      const rendered = renderError(error);
      const reason = rendered.reason;
      const message =
        reason === 'PATH_PARAMETER_TOO_LONG'
          ? 'A path parameter is too long'
          : reason === 'INVALID_URL_ENCODING'
            ? 'The URL is not valid percent-encoding'
            : rendered.message;
      // The logger redacts and caps the URL (src/lib/redact.ts): a cut of its own could split userinfo.
      request.log.info({ reason, url: request.raw.url }, message);
      sendError(request, reply, { status: plain === undefined ? rendered.status : 400, message, reason }, plain);
    },
  };
}
