import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Db } from '../db/database.js';
import { replyIdempotently } from '../idempotency/idempotency.http.js';
import type { Clock } from '../lib/clock.js';
import type { PushRuntime } from './push-runtime.js';
import {
  DeviceSendResponse,
  MessageParams,
  MessageResponse,
  MessagesSendResponse,
  SendPushBody,
} from './push.schemas.js';
import { getMessage, sendPushNotifications, type SendPushOptions } from './push.service.js';
import { INVALID_PUSH_PARAMETERS, validatePushItems } from './push-validation.js';

const security = [{ projectId: [], apiKey: [] }];
const errorResponses = {
  400: Type.String({ description: `text/plain: ${INVALID_PUSH_PARAMETERS}` }),
  401: Type.Object({ error: Type.String() }),
};

/** What the push routes (sends and credentials) need: the process's push runtime. */
export interface PushRouteDeps {
  db: Db;
  clock: Clock;
  push: PushRuntime;
}

/** Answers within the request budget (G6) less a margin, measured from when the request arrived. */
function deadlineOf(push: PushRuntime, reply: FastifyReply): number {
  const budget = push.config.requestTimeoutMs;
  return push.clock.now() - reply.elapsedTime + budget - Math.min(5000, budget / 10);
}

export function registerPushRoutes(fastify: FastifyInstance, deps: PushRouteDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  const sendRoute = (url: string, variant: SendPushOptions['variant'], summary: string) =>
    app.post(
      url,
      {
        config: { auth: 'secret', rateLimitClass: 'send', plainText400: INVALID_PUSH_PARAMETERS },
        // The body schema documents the shape; `validatePushItems` checks it and names the broken rule.
        validatorCompiler: () => () => true,
        schema: {
          summary,
          tags: ['push'],
          security,
          body: SendPushBody,
          response: { 200: variant === 'messages' ? MessagesSendResponse : DeviceSendResponse, ...errorResponses },
        },
      },
      async (request, reply) => {
        const body: unknown = request.body;
        // Checked before the idempotency claim, so a refused body never occupies a key.
        const items = validatePushItems(
          typeof body === 'object' && body !== null
            ? (body as { push_notifications?: unknown }).push_notifications
            : undefined,
        );
        return replyIdempotently(deps, request, reply, `push-send:${variant}`, async () => {
          const push = deps.push;
          const results = await sendPushNotifications(push, deps.db, request.auth!.projectId, items, {
            variant,
            deadlineMs: deadlineOf(push, reply),
          });
          return { status: 200, body: { delivery_results: results } };
        });
      },
    );

  sendRoute('/api/v1/messages:send', 'messages', 'Send push notifications to users (or devices)');
  sendRoute(
    '/api/v1/send-push-notifications',
    'device',
    'Send push notifications to devices (or users), with status per result',
  );

  app.get(
    '/api/v1/messages/:message_id',
    {
      config: { auth: 'secret', rateLimitClass: 'management' },
      schema: {
        summary: 'One sent message and its outcome',
        tags: ['push'],
        security,
        params: MessageParams,
        response: { 200: MessageResponse, 404: Type.Object({ error: Type.String() }) },
      },
    },
    async (request) => getMessage(deps.db, request.auth!.projectId, request.params.message_id),
  );
}
