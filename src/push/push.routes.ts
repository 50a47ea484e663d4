import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Db } from '../db/database.js';
import { idempotencyKeyOf, replyIdempotently } from '../idempotency/idempotency.http.js';
import type { Clock } from '../lib/clock.js';
import type { PushRuntime } from './push-runtime.js';
import {
  DeviceSendResponse,
  MessageList,
  MessageParams,
  MessageResponse,
  MessagesSendResponse,
  SendPushBody,
  UserMessagesQuery,
} from './push.schemas.js';
import { getMessage, listUserMessages, sendPushNotifications, type SendPushOptions } from './push.service.js';
import { ProjectUserId } from '../users/users.schemas.js';
import { checkPushContent, INVALID_PUSH_PARAMETERS, pushBodyError } from './push-request.js';

const security = [{ projectId: [], apiKey: [] }];
const errorResponses = {
  400: Type.String({ description: `text/plain: ${INVALID_PUSH_PARAMETERS}` }),
  401: Type.Object({ error: Type.String() }),
};

interface SendDoc {
  operationId: string;
  summary: string;
  description: string;
}

/** What the push routes (sends and credentials) need: the process's push runtime. */
export interface PushRouteDeps {
  db: Db;
  clock: Clock;
  push: PushRuntime;
}

/** Answers within the request budget (rule `request-limits`) less a margin, measured from when the request arrived. */
function deadlineOf(push: PushRuntime, reply: FastifyReply): number {
  const budget = push.config.requestTimeoutMs;
  return push.clock.now() - reply.elapsedTime + budget - Math.min(5000, budget / 10);
}

export function registerPushRoutes(fastify: FastifyInstance, deps: PushRouteDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  const sendRoute = (url: string, variant: SendPushOptions['variant'], doc: SendDoc) =>
    app.post(
      url,
      {
        config: { auth: 'secret', rateLimitClass: 'send', plainText400: INVALID_PUSH_PARAMETERS },
        // The body schema checks each item; the 400 names the rule it broke and the item.
        schemaErrorFormatter: pushBodyError,
        schema: {
          ...doc,
          tags: ['push'],
          security,
          body: SendPushBody,
          response: { 200: variant === 'messages' ? MessagesSendResponse : DeviceSendResponse, ...errorResponses },
        },
      },
      async (request, reply) => {
        // Checked before the idempotency claim, so a refused body never occupies a key.
        const items = checkPushContent(request.body.push_notifications);
        // The results are plain objects built in the response schema's key order, so V8's own
        // JSON.stringify writes the same bytes as the schema serializer at a fraction of its cost (its
        // string escaping is per character, on every result of a large send). A keyed request keeps the
        // schema serializer: its stored answer is replayed from the database, whose JSON may reorder
        // keys.
        const keyed = idempotencyKeyOf(request) !== undefined;
        if (!keyed) reply.type('application/json; charset=utf-8');
        return replyIdempotently(deps, request, reply, `push-send:${variant}`, async () => {
          const push = deps.push;
          const results = await sendPushNotifications(push, deps.db, request.auth!.projectId, items, {
            variant,
            deadlineMs: deadlineOf(push, reply),
          });
          const answer = { delivery_results: results };
          return { status: 200, body: keyed ? answer : JSON.stringify(answer) };
        });
      },
    );

  // `::` is a literal colon (a single one would start a path parameter and match `/messagesX`).
  sendRoute('/api/v1/messages::send', 'messages', {
    operationId: 'sendMessages',
    summary: 'Send push notifications to users (or devices)',
    description:
      "Sends each notification to its target: every active device of a `project_user_id`, or one `device_id`. Answers once every provider has answered (or the request budget ran out) with one result per notification and each device's outcome. An `Idempotency-Key` header makes a retry answer the first response instead of sending again.",
  });
  sendRoute('/api/v1/send-push-notifications', 'device', {
    operationId: 'sendPushNotifications',
    summary: 'Send push notifications to devices (or users), with status per result',
    description:
      'The same send as `POST /api/v1/messages:send`, answering a status, `created_at` and the device outcomes per notification.',
  });

  app.get(
    '/api/v1/messages/:message_id',
    {
      config: { auth: 'secret', rateLimitClass: 'management' },
      schema: {
        operationId: 'getMessage',
        summary: 'One sent message and its outcome',
        description:
          'A message sent through `messages:send` or a campaign: its status, provider, attempts and when it completed.',
        tags: ['push'],
        security,
        params: MessageParams,
        response: { 200: MessageResponse, 404: Type.Object({ error: Type.String() }) },
      },
    },
    async (request) => getMessage(deps.db, request.auth!.projectId, request.params.message_id),
  );

  app.get(
    '/api/v1/users/:project_user_id/messages',
    {
      config: { auth: 'secret', rateLimitClass: 'management' },
      schema: {
        operationId: 'listUserMessages',
        summary: 'Messages sent to a user, newest first',
        description:
          "The messages addressed to this `project_user_id` (`messages:send` and `send-push-notifications` to the user), one per device reached, newest first; pass `next_cursor` as `cursor` for older ones. Sends addressed to a `device_id`, campaign sends included, are not listed here: a campaign's are listed by its trigger (`GET /api/v1/campaigns/{campaign_id}/triggers/{trigger_id}/deliveries`). Messages stay listed after the user is deleted, until retention expires them.",
        tags: ['push'],
        security,
        params: Type.Object({ project_user_id: ProjectUserId }),
        querystring: UserMessagesQuery,
        response: {
          200: MessageList,
          400: Type.Object({ error: Type.String() }),
          401: Type.Object({ error: Type.String() }),
        },
      },
    },
    async (request) =>
      listUserMessages(deps.db, request.auth!.projectId, request.params.project_user_id, request.query),
  );
}
