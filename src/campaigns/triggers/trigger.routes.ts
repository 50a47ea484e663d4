import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../errors.js';
import { renderError } from '../../http/error-handler.js';
import { replyIdempotently } from '../../idempotency/idempotency.http.js';
import type { SchemaError } from '../../lib/schema-validator.js';
import { CAMPAIGN_ID_PATTERN, ListQuery } from '../campaigns.schemas.js';
import { triggerBodyError } from './trigger-body.js';
import { TriggerBodySchema, TriggerListSchema, TriggerStatusSchema, triggerExample } from './trigger.schemas.js';
import { getTriggerStatus, listTriggers } from './trigger-status.service.js';
import type { TemplateRenderer } from '../templates/render-pool.js';
import { CAMPAIGN_ID_MESSAGE, dryRunTrigger, triggerCampaign, type TriggerDeps } from './trigger.service.js';

const FAILED = 'Failed to send campaign trigger message';
const security = [{ projectId: [], apiKey: [] }];
const tags = ['campaigns'];
const ErrorBody = Type.Object({ error: Type.String() });

/** Checked before the body, so a bad id answers its own message whatever the body holds. */
const CampaignIdParam = Type.String({ minLength: 1, pattern: CAMPAIGN_ID_PATTERN });

/** The route's schema refusals: the id (its own plain-text message), the body, the query. */
function triggerRequestError(errors: SchemaError[], dataVar: string): Error {
  if (dataVar === 'params') {
    const code = errors[0]?.keyword === 'minLength' ? 'MISSING_CAMPAIGN_ID' : 'INVALID_CAMPAIGN_ID';
    return new AppError('invalid', code, CAMPAIGN_ID_MESSAGE);
  }
  if (dataVar === 'body') return triggerBodyError(errors);
  return new AppError('invalid', 'INVALID_QUERY', `${dataVar}: dry_run is true or false`);
}

/** The causes rule `trigger-errors` files under the route's 400 that arrive as other errors. */
function asTriggerError(error: FastifyError | AppError): unknown {
  if (error instanceof AppError) {
    if (error.code === 'INVALID_JSON') return new AppError('invalid', 'INVALID_TRIGGER_BODY', error.message);
    return error.code === 'CAMPAIGN_NOT_FOUND' ? new AppError('invalid', error.code, error.message) : error;
  }
  if (error.statusCode === 400 && typeof error.code === 'string' && error.code.startsWith('FST_ERR_CTP'))
    return new AppError('invalid', 'INVALID_TRIGGER_BODY', error.message);
  return error;
}

/**
 * The trigger route has two fixed plain-text 400 messages (rule `trigger-errors`). Its
 * `plainText400` is the campaign-id one, which is what the app answers for a path it cannot even
 * route (bad percent-encoding, an over-long id). This route-level handler answers every other 400
 * with `Failed to send campaign trigger message` (the unknown campaign and unparsable JSON
 * included) and re-throws everything else to the app's error handler.
 */
function triggerErrorHandler(
  error: FastifyError | AppError,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  const mapped = asTriggerError(error);
  const rendered = renderError(mapped);
  if (rendered.status !== 400) throw mapped;
  request.log.info({ reason: rendered.reason, status: 400 }, rendered.message);
  const message = mapped instanceof AppError && mapped.message === CAMPAIGN_ID_MESSAGE ? CAMPAIGN_ID_MESSAGE : FAILED;
  return reply.code(400).header('X-Error-Reason', rendered.reason).type('text/plain; charset=utf-8').send(message);
}

export function registerTriggerRoutes(
  fastify: FastifyInstance,
  deps: TriggerDeps & { templates: TemplateRenderer },
): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db } = deps;

  // `::trigger` is the literal verb; the id may be empty or invalid so the route answers the contract's
  // 400 for it, but nothing else in the segment reaches the route (`c1:triggerX`, `c1:foo` are 404).
  app.post(
    '/api/v1/campaigns/:campaign_id(^[^/]*)::trigger',
    {
      config: { auth: 'secret', rateLimitClass: 'trigger', plainText400: CAMPAIGN_ID_MESSAGE },
      // eslint-disable-next-line @typescript-eslint/no-misused-promises -- it returns the (thenable) reply, as Fastify handlers may
      errorHandler: triggerErrorHandler,
      schemaErrorFormatter: triggerRequestError,
      schema: {
        operationId: 'triggerCampaign',
        summary: 'Trigger an API-triggered campaign',
        description:
          'Starts one run of an active, API-triggered campaign for the given audience (or its default audience) with the given trigger properties. ' +
          'Answers {"trigger_id"} once the trigger is stored; deliveries follow on the job queue (`GET /api/v1/campaigns/{campaign_id}/triggers/{trigger_id}` shows progress). ' +
          "`?dry_run=true` answers the audience it would reach instead, storing and sending nothing: a broadcast's counters include those the send policy would skip as `unsubscribed` and `not_reeligible` (frequency caps depend on sends still to come and are not counted). " +
          'For a message with `locales` it adds `locales`: recipients per message locale and the user locales that fall back, to what (rule `message-locales`).',
        tags,
        security,
        params: Type.Object({ campaign_id: CampaignIdParam }),
        body: TriggerBodySchema,
        querystring: Type.Object({ dry_run: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])) }),
        response: {
          200: Type.Union(
            [
              Type.Object({ trigger_id: Type.String() }),
              Type.Object(
                { dry_run: Type.Literal(true) },
                {
                  additionalProperties: true,
                  description:
                    "A dry run: `campaign_id`, `campaign_status`, `audience` and `counters` (as a trigger status counts them: of `eligible`, `skipped.unsubscribed` by topic or global opt-out, `skipped.no_device`, and for a broadcast `skipped.not_reeligible`, counted in the database), for targets each target's verdict (and `locale`), and for a message with `locales` the recipients per locale (rule `message-locales`)",
                },
              ),
            ],
            {
              title: 'TriggerCampaignResponse',
              examples: [
                { trigger_id: 'trg_9xK4' },
                {
                  dry_run: true,
                  campaign_id: 'spring-sale',
                  campaign_status: 'active',
                  audience: 'broadcast',
                  counters: {
                    targets: 0,
                    in_segment: 1200,
                    eligible: 1000,
                    devices: 830,
                    skipped: { audience_conditions: 200, unsubscribed: 120, no_device: 40, not_reeligible: 60 },
                  },
                  locales: {
                    property: 'locale',
                    recipients: [
                      { locale: null, users: 580 },
                      { locale: 'fr', users: 300 },
                      { locale: 'fr-CA', users: 120 },
                    ],
                    fallbacks: [
                      { user_locale: 'fr-BE', users: 40, falls_back_to: 'fr' },
                      { user_locale: 'de', users: 30, falls_back_to: null },
                    ],
                    without_locale: 550,
                    other: 0,
                  },
                },
              ],
            },
          ),
          400: Type.Union([Type.Literal(CAMPAIGN_ID_MESSAGE), Type.Literal(FAILED)], {
            description: 'text/plain, the cause in X-Error-Reason',
          }),
          401: ErrorBody,
        },
      },
    },
    async (request, reply) => {
      const campaignId = request.params.campaign_id;
      const projectId = request.auth!.projectId;
      if (request.query.dry_run === 'true') return dryRunTrigger(deps, projectId, campaignId, request.body);
      return replyIdempotently(deps, request, reply, 'trigger-campaign', async () => {
        const { triggerId } = await triggerCampaign(deps, projectId, campaignId, request.body);
        return { status: 200, body: { trigger_id: triggerId } };
      });
    },
  );

  const TriggerList = Type.Composite([TriggerListSchema], {
    title: 'TriggerList',
    examples: [{ triggers: [triggerExample], next_cursor: null }],
  });
  const TriggerParams = Type.Object({ campaign_id: Type.String(), trigger_id: Type.String() });
  app.get(
    '/api/v1/campaigns/:campaign_id/triggers/:trigger_id',
    {
      config: { auth: 'secret', rateLimitClass: 'management' },
      schema: {
        operationId: 'getTrigger',
        summary: "A trigger's state and counters",
        description:
          'Where one trigger is: planning and batches done, and its deliveries counted by outcome (sent, failed, skipped, ...). Poll it after `:trigger`.',
        tags,
        security,
        params: TriggerParams,
        response: { 200: TriggerStatusSchema, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
      },
    },
    async (request) =>
      getTriggerStatus(db, request.auth!.projectId, request.params.campaign_id, request.params.trigger_id),
  );

  app.get(
    '/api/v1/campaigns/:campaign_id/triggers',
    {
      config: { auth: 'secret', rateLimitClass: 'management' },
      schema: {
        operationId: 'listTriggers',
        summary: "A campaign's triggers, newest first",
        description:
          "One page of the campaign's triggers with their state; pass `next_cursor` as `cursor` for the next page. `state=scheduled` lists only those waiting for their `schedule.at`.",
        tags,
        security,
        params: Type.Object({ campaign_id: Type.String() }),
        querystring: Type.Composite([
          ListQuery,
          Type.Object({
            state: Type.Optional(
              Type.Literal('scheduled', {
                description: 'Only the triggers still waiting for their `schedule.at` (the one state filter offered).',
              }),
            ),
          }),
        ]),
        response: { 200: TriggerList, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
      },
    },
    async (request) => listTriggers(deps.readDb, request.auth!.projectId, request.params.campaign_id, request.query),
  );
}
