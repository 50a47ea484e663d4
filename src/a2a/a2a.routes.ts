import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { trimTrailing } from '../lib/trim.js';
import { parseJsonBody } from '../http/input-guard.js';
import { registerRateLimitHook } from '../http/rate-limit-hook.js';
import { authenticateKey } from '../projects/projects.service.js';
import { PUBLIC_DESCRIPTION, publicCard } from './agent-card.js';
import type { A2aDeps, CallContext } from './call-context.js';
import { dispatch } from './dispatch.js';
import { rpcError, toRpcError } from './errors.js';
import { failure, idOf, readEnvelope, success, type Envelope } from './json-rpc.js';
import { writeSse } from './sse.js';
import { createStatusUpdateBus, type StatusUpdateBus } from './tasks/status-updates.js';
import { startTaskReaper } from './tasks/task-leases.js';
import { chooseVersion } from './version.js';
import type { Codec, Operation } from './versions/codec.js';
import { codecFor } from './versions/codecs.js';
import { v1Codec } from './versions/v1.js';

const JSON_TYPES = /^application\/(json|a2a\+json)\s*(;|$)/i;

const versionOf = (request: FastifyRequest) =>
  chooseVersion(
    request.headers['a2a-version'],
    (request.query as Record<string, unknown> | undefined)?.['A2A-Version'],
  );
/** The codec of the request, or v1's error form when the version is unsupported (-32009 is a v1 error). */
const codecOf = (request: FastifyRequest): Codec => {
  const choice = versionOf(request);
  return choice.ok ? codecFor(choice.version) : v1Codec;
};

/** Where `/a2a` is: under PUBLIC_URL when set, else on the host the request named (then the card varies by Host). */
const endpointUrl = (deps: A2aDeps, request: FastifyRequest): string =>
  `${deps.config.publicUrl === undefined ? `${request.protocol}://${request.host}` : trimTrailing(deps.config.publicUrl, '/')}/a2a`;

function sendRpcError(request: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply {
  const rendered = toRpcError(error);
  if (rendered.code === -32603 && rendered.http !== 409) request.log.error({ err: error }, 'a2a request failed');
  else request.log.info({ reason: rendered.reason, code: rendered.code }, rendered.message);
  if (rendered.retryAfterSeconds !== undefined)
    reply.header('Retry-After', String(Math.max(1, Math.ceil(rendered.retryAfterSeconds))));
  return reply
    .code(rendered.http)
    .type('application/json; charset=utf-8')
    .send(failure(idOf(request.body), rendered, codecOf(request)));
}

function operationOf(codec: Codec, method: string): Operation {
  const operation = codec.methods.get(method);
  if (!operation)
    throw rpcError('METHOD_NOT_FOUND', `Method ${method.slice(0, 100)} is not a method of A2A ${codec.version}`, {
      metadata: { method: method.slice(0, 100), version: codec.version },
    });
  return operation;
}

function callContext(deps: A2aDeps, request: FastifyRequest, codec: Codec, updates: StatusUpdateBus): CallContext {
  const idempotencyKey = request.headers['x-service-idempotency-key'];
  return {
    deps,
    updates,
    writes: deps.writes,
    codec,
    projectId: request.auth!.projectId,
    logger: request.log,
    endpointUrl: () => endpointUrl(deps, request),
    ...(typeof idempotencyKey === 'string' ? { idempotencyKey } : {}),
  };
}

/**
 * A JSON-RPC notification (no `id`) runs like a request, a stream to its end, but the client gets
 * no reply body whatever happens (JSON-RPC 2.0 §4.1), so its failures are only logged.
 */
async function runNotification(call: CallContext, envelope: Envelope): Promise<void> {
  try {
    const outcome = await dispatch(call, operationOf(call.codec, envelope.method), envelope.params);
    if (outcome.kind === 'stream') for await (const _event of outcome.events);
  } catch (error) {
    const rendered = toRpcError(error);
    if (rendered.code === -32603)
      call.logger.error({ err: error, method: envelope.method.slice(0, 100) }, 'a2a notification failed');
    else
      call.logger.info(
        { reason: rendered.reason, code: rendered.code, method: envelope.method.slice(0, 100) },
        `a2a notification refused: ${rendered.message}`,
      );
  }
}

/**
 * `POST /a2a` (JSON-RPC 2.0 over HTTP, v1 and v0.3) and the public agent card. Authentication:
 * `X-API-Key` with a secret key; the project comes from the key (rule `a2a-auth`).
 */
export function registerA2aRoutes(app: FastifyInstance, deps: A2aDeps): void {
  const updates = createStatusUpdateBus(deps.pgPool, deps.logger, {
    listenPool: deps.listenPool,
    pollIntervalMs: deps.config.jobPollIntervalMs,
  });
  const writes = deps.writes;
  // Tasks whose instance died are failed after their lease and their idempotency keys released (tasks/task-leases.ts).
  const reaper = startTaskReaper({ db: deps.db, writes, clock: deps.clock, updates, logger: deps.logger });
  app.addHook('onClose', async () => {
    reaper.stop();
    await updates.close();
  });

  app.register(async (scope) => {
    // Only JSON bodies, checked at the edge (input-guard): text that is not JSON is -32700; NUL,
    // unpaired surrogates, nesting over the limit and prototype keys are -32602 naming the cause.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      ['application/json', 'application/a2a+json'],
      { parseAs: 'string', bodyLimit: deps.config.bodyLimitBytes },
      (_request, body, done) => {
        const text = typeof body === 'string' ? body : body.toString('utf8');
        try {
          done(null, parseJsonBody(text));
        } catch (error) {
          done(
            error instanceof AppError && error.code === 'INVALID_JSON' ? rpcError('PARSE_ERROR') : (error as Error),
            undefined,
          );
        }
      },
    );
    scope.setErrorHandler((error, request, reply) => {
      const code = (error as { code?: string }).code;
      if (code === 'FST_ERR_CTP_INVALID_JSON_BODY' || code === 'FST_ERR_CTP_EMPTY_JSON_BODY')
        return sendRpcError(request, reply, rpcError('PARSE_ERROR'));
      if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
        return sendRpcError(request, reply, rpcError('CONTENT_TYPE_NOT_SUPPORTED'));
      return sendRpcError(request, reply, error);
    });
    // Rule `a2a-errors`: authentication failures (a public key included) are HTTP 401 with a JSON-RPC envelope.
    scope.addHook('onRequest', async (request) => {
      const key = request.headers['x-api-key'];
      if (typeof key !== 'string' || key.trim() === '')
        throw rpcError('UNAUTHENTICATED', 'The X-API-Key header with a secret API key is required');
      const found = await authenticateKey(deps.db, key.trim());
      if (!found) throw rpcError('UNAUTHENTICATED', 'Invalid or revoked API key');
      if (found.kind !== 'secret')
        throw rpcError(
          'UNAUTHENTICATED',
          'The agent interface needs a secret API key (svc_sk_...); public keys are refused',
        );
      request.auth = found;
      if (!JSON_TYPES.test(request.headers['content-type'] ?? '')) throw rpcError('CONTENT_TYPE_NOT_SUPPORTED');
    });
    registerRateLimitHook(scope, deps.rateLimiter);

    const handleRpc = async (request: FastifyRequest, reply: FastifyReply) => {
      const choice = versionOf(request);
      if (!choice.ok)
        throw rpcError('VERSION_NOT_SUPPORTED', `A2A-Version ${choice.requested} is not supported; use 1.0 or 0.3`, {
          metadata: { requestedVersion: choice.requested },
        });
      const codec = codecFor(choice.version);
      const envelope = readEnvelope(request.body);
      const call = callContext(deps, request, codec, updates);
      if (envelope.notification) {
        await runNotification(call, envelope);
        return reply.code(204).send();
      }
      const operation = operationOf(codec, envelope.method);
      const outcome = await dispatch(call, operation, envelope.params);
      // An object payload is sent as `application/json; charset=utf-8` by Fastify's own default.
      if (outcome.kind === 'json') return reply.send(success(envelope.id, outcome.result));
      await writeSse(
        reply,
        outcome.events,
        (event) => success(envelope.id, codec.statusUpdate(event)),
        (error) => failure(envelope.id, toRpcError(error), codec),
      );
      return reply;
    };
    // `/a2a/` is the same endpoint: clients join a base URL and a path either way.
    for (const url of ['/a2a', '/a2a/'])
      scope.post(url, { config: { auth: 'none', rateLimitClass: 'a2a' }, schema: { hide: true } }, handleRpc);
  });

  app.get(
    '/.well-known/agent-card.json',
    { config: { auth: 'none' }, schema: { hide: true } },
    async (request, reply) => {
      const body = JSON.stringify(
        publicCard({ endpointUrl: endpointUrl(deps, request), description: PUBLIC_DESCRIPTION }),
      );
      const etag = `W/"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
      // A card built from the Host header must not land in a shared cache, where a forged Host would
      // serve other clients a foreign endpoint: public caching only with a configured PUBLIC_URL.
      if (deps.config.publicUrl) reply.header('Cache-Control', 'public, max-age=300');
      else reply.header('Cache-Control', 'private, no-cache').header('Vary', 'Host');
      reply.header('ETag', etag);
      const ifNoneMatch = request.headers['if-none-match'];
      if (
        ifNoneMatch &&
        (ifNoneMatch.trim() === '*' ||
          ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === etag.replace(/^W\//, '')))
      )
        return reply.code(304).send();
      return reply.type('application/json; charset=utf-8').send(body);
    },
  );
}
