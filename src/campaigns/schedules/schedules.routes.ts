import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../errors.js';
import { replyIdempotently } from '../../idempotency/idempotency.http.js';
import { ListQuery } from '../campaigns.schemas.js';
import { scheduleBodyError } from './schedule-body.js';
import { CreateScheduleBody, ScheduleList, ScheduleParams, ScheduleResponse } from './schedules.schemas.js';
import * as schedules from './schedules.service.js';

const security = [{ projectId: [], apiKey: [] }];
const tags = ['campaigns'];
const ErrorBody = Type.Object({ error: Type.String() });
const errors = { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody };
const management = { auth: 'secret', rateLimitClass: 'management' } as const;
const CampaignParams = Type.Object({ campaign_id: Type.String() });

const requestError = (dataVar: string) =>
  new AppError('invalid', 'INVALID_QUERY', `${dataVar}: limit is an integer from 1 to 100, cursor a next_cursor`);

/**
 * Recurring schedules of a campaign (rule `recurring-schedules`): JSON in and out, JSON
 * `{"error"}` with the cause in `X-Error-Reason` for every failure. Creating, pausing and resuming
 * honour `Idempotency-Key` (rule `rest-idempotency`).
 */
export function registerScheduleRoutes(fastify: FastifyInstance, deps: schedules.ScheduleDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db } = deps;
  const base = '/api/v1/campaigns/:campaign_id/schedules';

  app.post(
    base,
    {
      config: management,
      schemaErrorFormatter: (errs, dataVar) => (dataVar === 'body' ? scheduleBodyError(errs) : requestError(dataVar)),
      schema: {
        operationId: 'createSchedule',
        summary: 'Trigger a campaign on a recurring schedule',
        description:
          'Each occurrence of `cron` in `time_zone` (between `starts_at` and `ends_at`) creates a trigger as `:trigger` would, with the same checks, once per occurrence whatever the number of instances. ' +
          'Checked now: the cron (5 fields, at most one fire per 15 minutes by default), the zone, the bounds, and the audience and properties against the campaign (which must exist and be API-triggered; every trigger property it reads must be given). ' +
          'An occurrence while the campaign is not active is skipped and recorded on the schedule. ' +
          `A campaign holds at most ${schedules.MAX_SCHEDULES_PER_CAMPAIGN} schedules that have not ended (409 SCHEDULE_LIMIT_REACHED).`,
        tags,
        security,
        params: CampaignParams,
        body: CreateScheduleBody,
        response: { 201: ScheduleResponse, 409: ErrorBody, ...errors },
      },
    },
    async (request, reply) =>
      replyIdempotently(deps, request, reply, 'create-schedule', async () => ({
        status: 201,
        body: await schedules.createSchedule(deps, request.auth!.projectId, request.params.campaign_id, request.body),
      })),
  );

  app.get(
    base,
    {
      config: management,
      schemaErrorFormatter: (_errs, dataVar) => requestError(dataVar),
      schema: {
        operationId: 'listSchedules',
        summary: "A campaign's recurring schedules, oldest first",
        description: 'One page of schedules; pass `next_cursor` as `cursor` for the next page.',
        tags,
        security,
        params: CampaignParams,
        querystring: ListQuery,
        response: { 200: ScheduleList, ...errors },
      },
    },
    async (request) => schedules.listSchedules(db, request.auth!.projectId, request.params.campaign_id, request.query),
  );

  app.get(
    `${base}/:schedule_id`,
    {
      config: management,
      schema: {
        operationId: 'getSchedule',
        summary: 'A recurring schedule: its state, next occurrence and last occurrence',
        description:
          '`last_occurrence` names the trigger the last occurrence created, or why it was skipped (campaign not active, missed while no worker ran).',
        tags,
        security,
        params: ScheduleParams,
        response: { 200: ScheduleResponse, ...errors },
      },
    },
    async (request) =>
      schedules.getSchedule(db, request.auth!.projectId, request.params.campaign_id, request.params.schedule_id),
  );

  for (const [verb, summary, description, run] of [
    [
      'pause',
      'Pause a recurring schedule',
      'No occurrence fires until it is resumed; with `in_local_time`, the trigger already made for an occurrence whose instant is still ahead is canceled. Pausing a paused schedule answers it again; an ended one is 409.',
      schedules.pauseSchedule,
    ],
    [
      'resume',
      'Resume a paused recurring schedule',
      'The next occurrence is the first one after now (or after the last occurrence made, if its instant is still ahead): occurrences missed while paused are not replayed. Resuming an active schedule answers it again; an ended one (or one with no occurrence left before `ends_at`) is 409.',
      schedules.resumeSchedule,
    ],
  ] as const) {
    app.post(
      `${base}/:schedule_id(^[^/:]+)::${verb}`,
      {
        config: management,
        schema: {
          operationId: `${verb}Schedule`,
          summary,
          description,
          tags,
          security,
          params: ScheduleParams,
          response: { 200: ScheduleResponse, 409: ErrorBody, ...errors },
        },
      },
      async (request, reply) => {
        const { campaign_id, schedule_id } = request.params;
        return replyIdempotently(deps, request, reply, `${verb}-schedule`, async () => ({
          status: 200,
          body: await run(deps, request.auth!.projectId, campaign_id, schedule_id),
        }));
      },
    );
  }

  app.delete(
    `${base}/:schedule_id`,
    {
      config: management,
      schema: {
        operationId: 'deleteSchedule',
        summary: 'Delete a recurring schedule',
        description:
          'No occurrence fires any more; the triggers it created stay (they name it). Deleting a campaign deletes its schedules.',
        tags,
        security,
        params: ScheduleParams,
        response: { 200: Type.Object({}), ...errors },
      },
    },
    async (request) => {
      await schedules.deleteSchedule(
        deps,
        request.auth!.projectId,
        request.params.campaign_id,
        request.params.schedule_id,
      );
      return {};
    },
  );
}
