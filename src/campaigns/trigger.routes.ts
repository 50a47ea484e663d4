import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppDeps } from '../app.js';
import { AppError } from '../errors.js';
import { replyIdempotently } from '../idempotency/idempotency.http.js';
import { ListQuery } from './campaigns.schemas.js';
import { TriggerListSchema, TriggerStatusSchema } from './trigger.schemas.js';
import { getTriggerStatus, listTriggers } from './trigger-status.service.js';
import { CAMPAIGN_ID_MESSAGE, dryRunTrigger, triggerCampaign } from './trigger.service.js';

const FAILED = 'Failed to send campaign trigger message';
const VERB = ':trigger';
const security = [{ projectId: [], apiKey: [] }];
const tags = ['campaigns'];
const ErrorBody = Type.Object({ error: Type.String() });

/**
 * The trigger route has two fixed plain-text 400 messages (R15). Its `plainText400` is the general
 * one; this route-level handler answers the campaign-id message itself, turns the failures the
 * spec files under 400 (unknown campaign, unparsable body) into that 400, and passes everything
 * else on to the app's error handler (a throw here reaches the parent handler).
 */
function triggerErrorHandler(error: FastifyError | AppError, _request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error instanceof AppError && error.kind === 'invalid' && error.message === CAMPAIGN_ID_MESSAGE) {
    return reply.code(400).header('X-Error-Reason', error.code).type('text/plain; charset=utf-8').send(CAMPAIGN_ID_MESSAGE);
  }
  if (error instanceof AppError && error.code === 'CAMPAIGN_NOT_FOUND') throw new AppError('invalid', error.code, error.message);
  if (!(error instanceof AppError) && error.statusCode === 400 && typeof error.code === 'string' && error.code.startsWith('FST_ERR_CTP')) {
    throw new AppError('invalid', 'INVALID_TRIGGER_BODY', error.message);
  }
  throw error;
}

export function registerTriggerRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db } = deps;

  app.post(
    '/api/v1/campaigns/:campaign_action',
    {
      config: { auth: 'secret', rateLimitClass: 'trigger', plainText400: FAILED },
      errorHandler: triggerErrorHandler,
      schema: {
        summary: 'Trigger an API-triggered campaign (path: /api/v1/campaigns/{campaign_id}:trigger)',
        description:
          'Body (optional): {"audience": {"broadcast": true} | {"targets": [{"project_user_id"|"device_id"|"user_id": "..."}]}, "properties": {...}}. ' +
          'Answers {"trigger_id"} once the trigger is stored; `?dry_run=true` answers the audience it would reach instead, storing and sending nothing.',
        tags,
        security,
        params: Type.Object({ campaign_action: Type.String({ description: '`{campaign_id}:trigger`' }) }),
        querystring: Type.Object({ dry_run: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])) }),
        response: {
          200: Type.Union([Type.Object({ trigger_id: Type.String() }), Type.Object({ dry_run: Type.Literal(true) }, { additionalProperties: true })]),
          400: Type.String({ description: `text/plain: ${CAMPAIGN_ID_MESSAGE} | ${FAILED} (cause in X-Error-Reason)` }),
          401: ErrorBody,
        },
      },
    },
    async (request, reply) => {
      const action = request.params.campaign_action;
      if (!action.endsWith(VERB)) throw new AppError('not_found', 'ROUTE_NOT_FOUND', 'Not found');
      const campaignId = action.slice(0, -VERB.length);
      const projectId = request.auth!.projectId;
      if (request.query.dry_run === 'true') return dryRunTrigger(deps, projectId, campaignId, request.body);
      return replyIdempotently(deps, request, reply, 'trigger-campaign', async () => {
        const { triggerId } = await triggerCampaign(deps, projectId, campaignId, request.body);
        return { status: 200, body: { trigger_id: triggerId } };
      });
    },
  );

  const TriggerParams = Type.Object({ campaign_id: Type.String(), trigger_id: Type.String() });
  app.get(
    '/api/v1/campaigns/:campaign_id/triggers/:trigger_id',
    {
      config: { auth: 'secret', rateLimitClass: 'management' },
      schema: { summary: "A trigger's state and counters", tags, security, params: TriggerParams, response: { 200: TriggerStatusSchema, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody } },
    },
    async (request) => getTriggerStatus(db, request.auth!.projectId, request.params.campaign_id, request.params.trigger_id),
  );

  app.get(
    '/api/v1/campaigns/:campaign_id/triggers',
    {
      config: { auth: 'secret', rateLimitClass: 'management' },
      schema: { summary: "A campaign's triggers, newest first", tags, security, params: Type.Object({ campaign_id: Type.String() }), querystring: ListQuery, response: { 200: TriggerListSchema, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody } },
    },
    async (request) => listTriggers(db, request.auth!.projectId, request.params.campaign_id, request.query),
  );
}
