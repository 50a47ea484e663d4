import { Type, type Static } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import type { OutboundPolicy } from '../lib/outbound-url-policy.js';
import type { SecretBoxSource } from '../crypto/secret-box.js';
import type { DeliveryEvents } from '../push/delivery-event-publisher.js';
import {
  CreatedWebhook,
  CreateWebhookBody,
  RotatedWebhookSecret,
  UpdateWebhookBody,
  Webhook,
  WEBHOOK_SCHEMAS,
  WebhookList,
  WebhookParams,
  ref,
} from './webhooks.schemas.js';
import * as webhooks from './webhooks.service.js';

/** What the routes take (a narrow slice of the app's dependencies). */
export interface WebhookRouteDeps {
  db: Db;
  clock: Clock;
  /** Webhook URLs are tenant URLs. */
  outbound: OutboundPolicy;
  /** Seals the signing secrets. */
  secretBox: SecretBoxSource;
  /** This process's delivery-event emitter, whose subscription cache a change here refreshes at once. */
  events?: DeliveryEvents | undefined;
}

// Bodies are validated against the named schemas they reference; the type provider cannot see through a reference.
type CreateWebhookInput = Static<typeof CreateWebhookBody>;
type UpdateWebhookInput = Static<typeof UpdateWebhookBody>;

const config = { auth: 'secret', rateLimitClass: 'management' } as const;
const security = [{ projectId: [], apiKey: [] }];
const tags = ['webhooks'];
const ErrorBody = Type.Object({ error: Type.String() });
const errors = { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody };

const SIGNING =
  'Each event is POSTed as its own message `{"type","timestamp","data"}`, signed in the Standard Webhooks format ' +
  '(`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256>`; Svix libraries verify it), ' +
  'retried with exponential backoff for 24 h on a non-2xx answer or a network error, never following redirects.';

/** Delivery-event webhooks, managed with the secret key. */
export function registerWebhookRoutes(fastify: FastifyInstance, deps: WebhookRouteDeps): void {
  for (const schema of WEBHOOK_SCHEMAS) fastify.addSchema(schema);
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const service: webhooks.WebhookDeps = {
    db: deps.db,
    clock: deps.clock,
    outbound: deps.outbound,
    secrets: deps.secretBox,
    events: deps.events,
  };

  app.post(
    '/api/v1/webhooks',
    {
      config,
      schema: {
        operationId: 'createWebhook',
        summary: 'Subscribe a URL to delivery events',
        description: `${SIGNING} The answer carries the signing secret, shown only here. At most ${webhooks.MAX_WEBHOOKS_PER_PROJECT} webhooks per project (409 WEBHOOK_LIMIT_REACHED); a URL the outbound-URL policy refuses is 400 WEBHOOK_URL_REFUSED.`,
        tags,
        security,
        body: ref(CreateWebhookBody),
        response: { 201: ref(CreatedWebhook), 409: ErrorBody, ...errors },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(await webhooks.createWebhook(service, request.auth!.projectId, request.body as CreateWebhookInput)),
  );

  app.get(
    '/api/v1/webhooks',
    {
      config,
      schema: {
        operationId: 'listWebhooks',
        summary: "List the project's webhooks",
        description: 'Oldest first; signing secrets are never shown again.',
        tags,
        security,
        response: { 200: ref(WebhookList), 401: ErrorBody },
      },
    },
    async (request) => webhooks.listWebhooks(service, request.auth!.projectId),
  );

  app.get(
    '/api/v1/webhooks/:webhook_id',
    {
      config,
      schema: {
        operationId: 'getWebhook',
        summary: 'Get a webhook',
        description:
          'The subscription without its signing secret; `enabled` and `disabled_reason` say whether it receives events.',
        tags,
        security,
        params: WebhookParams,
        response: { 200: ref(Webhook), ...errors },
      },
    },
    async (request) => webhooks.getWebhook(service, request.auth!.projectId, request.params.webhook_id),
  );

  app.patch(
    '/api/v1/webhooks/:webhook_id',
    {
      config,
      schema: {
        operationId: 'updateWebhook',
        summary: 'Change a webhook',
        description:
          'Only the fields given change. A new `url` is checked like at creation. `enabled: true` re-enables a webhook that was disabled.',
        tags,
        security,
        params: WebhookParams,
        body: ref(UpdateWebhookBody),
        response: { 200: ref(Webhook), ...errors },
      },
    },
    async (request) =>
      webhooks.updateWebhook(
        service,
        request.auth!.projectId,
        request.params.webhook_id,
        request.body as UpdateWebhookInput,
      ),
  );

  app.delete(
    '/api/v1/webhooks/:webhook_id',
    {
      config,
      schema: {
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook',
        description: 'Also answers `{}` when the webhook does not exist. Events queued for it are dropped.',
        tags,
        security,
        params: WebhookParams,
        response: { 200: Type.Object({}), 400: ErrorBody, 401: ErrorBody },
      },
    },
    async (request) => {
      await webhooks.deleteWebhook(service, request.auth!.projectId, request.params.webhook_id);
      return {};
    },
  );

  app.post(
    '/api/v1/webhooks/:webhook_id(^wh_[A-Za-z0-9]{1,64})::rotate-secret',
    {
      config,
      schema: {
        operationId: 'rotateWebhookSecret',
        summary: 'Replace the signing secret (path: /api/v1/webhooks/{webhook_id}:rotate-secret)',
        description:
          'Answers the new secret, shown only here. For 24 h messages carry two signatures, one per secret, so receivers can switch without losing a message.',
        tags,
        security,
        params: WebhookParams,
        response: { 200: ref(RotatedWebhookSecret), ...errors },
      },
    },
    async (request) => webhooks.rotateWebhookSecret(service, request.auth!.projectId, request.params.webhook_id),
  );
}
