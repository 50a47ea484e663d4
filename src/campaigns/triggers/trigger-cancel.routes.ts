import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../errors.js';
import { replyIdempotently } from '../../idempotency/idempotency.http.js';
import type { SchemaError } from '../../lib/schema-validator.js';
import { emptyCounters } from './trigger-counters.js';
import { ScheduleSchema, TriggerStatusSchema, triggerExample } from './trigger.schemas.js';
import { cancelCampaignTrigger, rescheduleCampaignTrigger, type TriggerControlDeps } from './trigger-cancel.service.js';

const security = [{ projectId: [], apiKey: [] }];
const tags = ['campaigns'];
const ErrorBody = Type.Object({ error: Type.String() });
const TriggerParams = Type.Object({ campaign_id: Type.String(), trigger_id: Type.String() });

const AT_EXPECTED = 'expected an RFC 3339 instant such as 2026-12-24T09:00:00Z';

/**
 * A reschedule body's first schema error in the words `parseSchedule` uses for `:trigger`'s
 * `schedule` (the schema checks the shape; what `at` may hold is checked after it, as on `:trigger`).
 */
function rescheduleBodyError(errors: SchemaError[]): AppError {
  const error = errors[0];
  const invalid = (message: string) => new AppError('invalid', 'INVALID_SCHEDULE', message);
  const property = error?.params.additionalProperty;
  const extra = typeof property === 'string' ? property : '';
  if (error?.instancePath === '')
    return error.keyword === 'additionalProperties'
      ? invalid(`Unexpected field "${extra}"`)
      : invalid('The body must be {"schedule": {"at": "<RFC 3339 instant>"}}');
  if (error?.instancePath === '/schedule' && error.keyword === 'additionalProperties')
    return invalid(`schedule: unexpected field "${extra}"`);
  if (error?.instancePath === '/schedule' && error.keyword === 'type')
    return invalid('schedule: expected an object {"at": "<RFC 3339 instant>"}');
  return invalid(`schedule.at: ${AT_EXPECTED}`);
}

const badParams = () => new AppError('invalid', 'INVALID_ID', 'campaign_id and trigger_id must be given');

/** `:cancel` and `:reschedule` of one trigger: JSON errors, `Idempotency-Key` honoured as on `:trigger`. */
export function registerTriggerControlRoutes(fastify: FastifyInstance, deps: TriggerControlDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post(
    '/api/v1/campaigns/:campaign_id/triggers/:trigger_id(^[^/:]+)::cancel',
    {
      config: { auth: 'secret', rateLimitClass: 'trigger' },
      schema: {
        operationId: 'cancelTrigger',
        summary: 'Cancel a scheduled or running trigger',
        description:
          'A scheduled trigger never starts; a running one sends nothing more once the cancel has committed (chunks already under way end and are recorded). ' +
          'What was sent stays sent and counted. Answers the trigger, `canceled`, with its counters (they settle once the batches under way close). ' +
          'Canceling a canceled trigger answers it again; a completed or failed trigger is 409.',
        tags,
        security,
        params: TriggerParams,
        response: {
          200: Type.Composite([TriggerStatusSchema], {
            title: 'CanceledTrigger',
            examples: [
              {
                ...triggerExample,
                state: 'canceled',
                error: 'canceled by request',
                counters: {
                  ...emptyCounters(),
                  in_segment: 1000,
                  eligible: 980,
                  devices: 400,
                  skipped: { no_device: 20 },
                  accepted: 400,
                },
                progress: { batches_planned: 3, batches_finished: 3, planning_done: true },
              },
            ],
          }),
          400: ErrorBody,
          401: ErrorBody,
          404: ErrorBody,
          409: ErrorBody,
        },
      },
    },
    async (request, reply) => {
      const { campaign_id, trigger_id } = request.params;
      return replyIdempotently(deps, request, reply, 'cancel-trigger', async () => ({
        status: 200,
        body: await cancelCampaignTrigger(deps, request.auth!.projectId, campaign_id, trigger_id),
      }));
    },
  );

  app.post(
    '/api/v1/campaigns/:campaign_id/triggers/:trigger_id(^[^/:]+)::reschedule',
    {
      config: { auth: 'secret', rateLimitClass: 'trigger' },
      schema: {
        operationId: 'rescheduleTrigger',
        summary: 'Move a scheduled trigger to another time',
        description:
          'Only while the trigger is `scheduled` (409 once it has started or was canceled); `schedule.at` follows the rules of `:trigger`.',
        tags,
        security,
        params: TriggerParams,
        body: Type.Object(
          { schedule: ScheduleSchema },
          { additionalProperties: false, examples: [{ schedule: { at: '2026-12-24T18:00:00Z' } }] },
        ),
        response: {
          200: Type.Composite([TriggerStatusSchema], {
            title: 'RescheduledTrigger',
            examples: [
              {
                ...triggerExample,
                audience: { broadcast: true },
                properties: { sale: 'winter' },
                state: 'scheduled',
                started_at: null,
                finished_at: null,
                scheduled_at: '2026-12-24T18:00:00.000Z',
                audience_evaluated_at: '2026-12-24T18:00:00.000Z',
                counters: emptyCounters(),
                progress: { batches_planned: 0, batches_finished: 0, planning_done: false },
              },
            ],
          }),
          400: ErrorBody,
          401: ErrorBody,
          404: ErrorBody,
          409: ErrorBody,
        },
      },
      schemaErrorFormatter: (errors, dataVar) => (dataVar === 'body' ? rescheduleBodyError(errors) : badParams()),
    },
    async (request, reply) => {
      const { campaign_id, trigger_id } = request.params;
      return replyIdempotently(deps, request, reply, 'reschedule-trigger', async () => ({
        status: 200,
        body: await rescheduleCampaignTrigger(deps, request.auth!.projectId, campaign_id, trigger_id, request.body),
      }));
    },
  );
}
