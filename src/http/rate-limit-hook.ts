import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';

/**
 * Rule `rate-limits`: after authentication, and before the body is read, spend one token of the route's class
 * for the caller's project. Every limited response carries the IETF draft fields
 * (draft-ietf-httpapi-ratelimit-headers-06): `RateLimit-Limit` (bucket capacity),
 * `RateLimit-Remaining` (whole tokens left), `RateLimit-Reset` (delta-seconds until the bucket is
 * full again) and `RateLimit-Policy: <limit>;w=<seconds to refill from empty>`. A refusal is a 429
 * with `Retry-After` (delta-seconds until one token is back) and a JSON `{"error"}` body.
 */
export function registerRateLimitHook(app: FastifyInstance, limiter: RateLimiter): void {
  app.addHook('onRequest', async (request, reply) => {
    const routeClass = request.routeOptions.config.rateLimitClass;
    if (routeClass === undefined || request.auth === null) return;
    // The public key spends its own bucket, never the secret key's (docs/security.md).
    const cls = request.auth.kind === 'public' ? 'client' : routeClass;
    let decision;
    try {
      decision = await limiter.take(request.auth.projectId, cls);
    } catch (error) {
      // A limiter fault must never fail the request (fail open); limiters are built not to throw.
      request.log.warn({ err: error }, 'rate limiter failed; request let through');
      return;
    }
    reply.header('RateLimit-Limit', String(decision.limit));
    reply.header('RateLimit-Remaining', String(Math.max(0, Math.floor(decision.remaining))));
    reply.header('RateLimit-Reset', String(Math.max(0, Math.ceil(decision.resetSeconds))));
    if (decision.windowSeconds !== undefined)
      reply.header('RateLimit-Policy', `${decision.limit};w=${decision.windowSeconds}`);
    if (!decision.allowed) {
      throw new AppError(
        'rate_limited',
        'RATE_LIMITED',
        `Rate limit exceeded for ${cls} requests; retry after ${decision.retryAfterSeconds} s`,
        {
          retryAfterSeconds: Math.max(1, decision.retryAfterSeconds),
        },
      );
    }
  });
}
