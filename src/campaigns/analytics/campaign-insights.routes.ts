import type { Clock } from '../../lib/clock.js';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/database.js';
import {
  AnalyticsQuery,
  AnalyticsResponse,
  CampaignIdParams,
  errorResponses,
  PreviewBody,
  PreviewResponse,
  security,
  tags,
  TriggerDeliveryList,
  TriggerParams,
} from './campaign-insights.schemas.js';
import { CAMPAIGN_ID_PATTERN, ListQuery } from '../campaigns.schemas.js';
import { previewCampaign } from './campaign-preview.service.js';
import { campaignAnalytics, triggerAnalytics } from './delivery-analytics.service.js';
import type { TemplateRenderer } from '../templates/render-pool.js';
import { listTriggerDeliveries } from '../triggers/trigger-status.service.js';

const config = { auth: 'secret', rateLimitClass: 'management' } as const;
/** The campaign id pattern without its anchors, as a route constraint (so `:previewX` is no route). */
const CAMPAIGN_ID_ROUTE = `(${CAMPAIGN_ID_PATTERN.slice(0, -1)})`;

const ANALYTICS =
  'Counts of the recorded outcomes (one per device a trigger reached, render skips included) by state, by provider and state, ' +
  'and by failure reason, and sends and failures per UTC time bucket, computed in the database. `since`/`until` bound the outcome times.';

/** The console's campaign reads: template preview, delivery analytics and a trigger's outcomes. */
export function registerCampaignInsightRoutes(
  fastify: FastifyInstance,
  deps: { db: Db; readDb: Db; templates: TemplateRenderer; clock: Clock },
): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  // Analytics may lag the primary: they read the replica (DATABASE_READ_URL) when there is one.
  const { readDb } = deps;

  app.post(
    `/api/v1/campaigns/:campaign_id${CAMPAIGN_ID_ROUTE}::preview`,
    {
      config,
      schema: {
        operationId: 'previewCampaign',
        summary: "Preview a campaign's message for one user (path: /api/v1/campaigns/{campaign_id}:preview)",
        description:
          'Renders the message as a trigger with these properties would for the user (same sandboxed renderer and budgets), ' +
          "and answers each provider's payload with its size against that provider's limit. A trigger property the campaign " +
          'reads but the body lacks is a `missing_property` warning (it renders as `{{trigger.<name>}}`); a render the trigger ' +
          'would skip for this user is a 400 naming why. An event-triggered campaign renders `event.*` from a sample event: ' +
          'its event name, `event.timestamp` (now by default) and `event.properties` (empty by default). Nothing is stored or sent.',
        tags,
        security,
        params: CampaignIdParams,
        body: PreviewBody,
        response: { 200: PreviewResponse, ...errorResponses },
      },
    },
    async (request) => previewCampaign(deps, request.auth!.projectId, request.params.campaign_id, request.body),
  );

  app.get(
    '/api/v1/campaigns/:campaign_id/analytics',
    {
      config,
      schema: {
        operationId: 'getCampaignAnalytics',
        summary: "Delivery analytics over a campaign's triggers",
        description: ANALYTICS,
        tags,
        security,
        params: CampaignIdParams,
        querystring: AnalyticsQuery,
        response: { 200: AnalyticsResponse, ...errorResponses },
      },
    },
    async (request) => campaignAnalytics(readDb, request.auth!.projectId, request.params.campaign_id, request.query),
  );

  app.get(
    '/api/v1/campaigns/:campaign_id/triggers/:trigger_id/analytics',
    {
      config,
      schema: {
        operationId: 'getTriggerAnalytics',
        summary: 'Delivery analytics of one trigger',
        description: `${ANALYTICS} \`minute\` buckets chart a trigger that lasts seconds.`,
        tags,
        security,
        params: TriggerParams,
        querystring: AnalyticsQuery,
        response: { 200: AnalyticsResponse, ...errorResponses },
      },
    },
    async (request) =>
      triggerAnalytics(
        readDb,
        request.auth!.projectId,
        request.params.campaign_id,
        request.params.trigger_id,
        request.query,
      ),
  );

  app.get(
    '/api/v1/campaigns/:campaign_id/triggers/:trigger_id/deliveries',
    {
      config,
      schema: {
        operationId: 'listTriggerDeliveries',
        summary: "A trigger's outcome per device, with its message ids",
        description:
          'One row per device the trigger reached: its user, provider, outcome, failure or skip reason, and the message id ' +
          '(`GET /api/v1/messages/{message_id}`), in device id order; pass `next_cursor` as `cursor` for the next page. ' +
          'Rows appear as batches record their outcomes.',
        tags,
        security,
        params: TriggerParams,
        querystring: ListQuery,
        response: { 200: TriggerDeliveryList, ...errorResponses },
      },
    },
    async (request) =>
      listTriggerDeliveries(
        readDb,
        request.auth!.projectId,
        request.params.campaign_id,
        request.params.trigger_id,
        request.query,
      ),
  );
}
