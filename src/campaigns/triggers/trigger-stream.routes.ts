import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import { ErrorBody, errorResponses, security, tags, TriggerParams } from '../analytics/campaign-insights.schemas.js';
import { createTriggerStreams } from './trigger-stream.js';

/** `GET …/triggers/{trigger_id}/stream`: a trigger's progress, live. */
export function registerTriggerStreamRoute(
  fastify: FastifyInstance,
  deps: { db: Db; config: Pick<Config, 'triggerStreamsPerProject' | 'triggerStreamPollMs'> },
): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const streams = createTriggerStreams({
    perProject: deps.config.triggerStreamsPerProject,
    pollMs: deps.config.triggerStreamPollMs,
  });
  // Open streams would hold the server's close until its deadline: end them as shutdown begins.
  fastify.addHook('preClose', async () => streams.closeAll());

  app.get(
    '/api/v1/campaigns/:campaign_id/triggers/:trigger_id/stream',
    {
      config: { auth: 'secret', rateLimitClass: 'management' },
      schema: {
        operationId: 'streamTrigger',
        summary: "A trigger's progress, live (Server-Sent Events)",
        description:
          'Authenticate with the usual headers (read it with fetch and a stream reader; EventSource cannot send them). ' +
          '`event: progress` carries the same JSON as `GET /api/v1/campaigns/{campaign_id}/triggers/{trigger_id}`, first at once and ' +
          'then whenever it changes; `event: done` carries the final status once the trigger has completed, failed or been ' +
          'canceled, and the stream ends. A comment line every 15 s keeps it open. At most `TRIGGER_STREAMS_PER_PROJECT` ' +
          'streams per project at once (429 beyond). Unknown campaign or trigger: 404 before the stream starts.',
        tags,
        security,
        params: TriggerParams,
        response: {
          200: {
            description: 'The stream: `event: progress` … `event: done`',
            content: {
              'text/event-stream': {
                schema: Type.String({ examples: ['event: progress\ndata: {"status":"running"}\n\n'] }),
              },
            },
          },
          ...errorResponses,
          429: ErrorBody,
        },
      },
    },
    async (request, reply) =>
      streams.serve(deps.db, request, reply, {
        projectId: request.auth!.projectId,
        campaignId: request.params.campaign_id,
        triggerId: request.params.trigger_id,
      }),
  );
}
