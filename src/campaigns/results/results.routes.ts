import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/database.js';
import { CampaignIdParams, errorResponses, security, tags } from '../analytics/campaign-insights.schemas.js';
import { ResultsQuery, ResultsResponse } from './results.schemas.js';
import { campaignResults } from './results.service.js';

/** `GET /api/v1/campaigns/{campaign_id}/results`: a thin transport over `campaignResults` (as the A2A skill `get-campaign-stats`). */
export function registerCampaignResultsRoutes(fastify: FastifyInstance, deps: { readDb: Db }): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/api/v1/campaigns/:campaign_id/results',
    {
      config: { auth: 'secret', rateLimitClass: 'management' },
      schema: {
        operationId: 'getCampaignResults',
        summary: 'Did it work: sends, deliveries and opens per variant, with intervals and lift',
        description:
          'Per campaign (or one trigger), per trigger and per variant (the control group included): devices sent to, ' +
          'delivered (accepted), opened, and the open rate (opened / delivered) with its 95% Wilson score interval; for each ' +
          'variant the difference from the baseline (the control when it has a rate, else the first variant) with its 95% ' +
          'Newcombe interval and the relative lift; and the same counts per UTC time bucket. Read from the per-minute rollups of deliveries, opens and conversions ' +
          '(the read replica when DATABASE_READ_URL is set). docs/campaigns.md, "Measurement: results", gives the formulas.',
        tags,
        security,
        params: CampaignIdParams,
        querystring: ResultsQuery,
        response: { 200: ResultsResponse, ...errorResponses },
      },
    },
    async (request) => campaignResults(deps.readDb, request.auth!.projectId, request.params.campaign_id, request.query),
  );
}
