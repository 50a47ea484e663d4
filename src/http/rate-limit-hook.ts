import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';

/**
 * R18: after authentication, spend one token of the route's class for the caller's project.
 * `RateLimit-*` headers (IETF draft names) go on every limited response; a refusal is a 429.
 */
export function registerRateLimitHook(app: FastifyInstance, limiter: RateLimiter): void {
  app.addHook('onRequest', async (request, reply) => {
    const cls = request.routeOptions.config.rateLimitClass;
    if (cls === undefined || request.auth === null) return;
    const decision = await limiter.take(request.auth.projectId, cls);
    reply.header('RateLimit-Limit', String(decision.limit));
    reply.header('RateLimit-Remaining', String(decision.remaining));
    reply.header('RateLimit-Reset', String(decision.resetSeconds));
    if (!decision.allowed) {
      throw new AppError('rate_limited', 'RATE_LIMITED', `Rate limit exceeded for ${cls} requests`, { retryAfterSeconds: decision.retryAfterSeconds });
    }
  });
}
