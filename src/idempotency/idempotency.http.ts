import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import { hashRequest, runIdempotent, type StoredResponse } from './idempotency.service.js';

/** The REST idempotency header (rule `rest-idempotency`): `Idempotency-Key`, or `X-Service-Idempotency-Key`. */
export function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const value = request.headers['idempotency-key'] ?? request.headers['x-service-idempotency-key'];
  return typeof value === 'string' ? value : undefined;
}

export interface IdempotencyDeps {
  db: Db;
  clock: Clock;
}

/**
 * Answers with `execute`'s response, through the idempotency store when the caller sent a key.
 * Replays carry `Idempotent-Replayed: true`.
 */
export async function replyIdempotently(
  deps: IdempotencyDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  scope: string,
  execute: () => Promise<StoredResponse>,
): Promise<FastifyReply> {
  const key = idempotencyKeyOf(request);
  if (key === undefined) {
    const response = await execute();
    return reply.code(response.status).send(response.body);
  }
  const ref = { projectId: request.auth!.projectId, scope, key };
  const requestHash = hashRequest([
    request.method,
    request.routeOptions.url,
    request.params,
    request.query,
    request.body,
  ]);
  const { response, replayed } = await runIdempotent(deps.db, deps.clock, ref, requestHash, execute);
  if (replayed) reply.header('Idempotent-Replayed', 'true');
  return reply.code(response.status).send(response.body);
}
