import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import { CampaignIdParams, errorResponses, security, tags } from '../analytics/campaign-insights.schemas.js';
import { EligibilityQuery, EligibilityResponse } from './eligibility.schemas.js';
import { explainEligibility } from './eligibility.service.js';

const config = { auth: 'secret', rateLimitClass: 'management' } as const;

/** `GET /api/v1/campaigns/{campaign_id}/eligibility`: why a campaign would, or would not, reach one user. */
export function registerEligibilityRoutes(fastify: FastifyInstance, deps: { db: Db; clock: Clock }): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/api/v1/campaigns/:campaign_id/eligibility',
    {
      config,
      schema: {
        operationId: 'getCampaignEligibility',
        summary: 'Why a campaign would or would not reach one user',
        description:
          'Each gate a campaign send passes, in order (segment, audience, devices, topic, global_opt_out, reeligibility, ' +
          'frequency_caps, quiet_hours, rate_limit), with its verdict now, the skip reason a trigger records when it fails, ' +
          'and the data it read. The same checks the fan-out runs; read only (it takes no cap slot and no send-rate budget). ' +
          "With `trigger_id`, that trigger's segment, audience conditions, topic and policy; without, the campaign's current " +
          'definition and no audience conditions. Unknown campaign, trigger or user: 404.',
        tags,
        security,
        params: CampaignIdParams,
        querystring: EligibilityQuery,
        response: { 200: EligibilityResponse, ...errorResponses },
      },
    },
    async (request) => explainEligibility(deps, request.auth!.projectId, request.params.campaign_id, request.query),
  );
}
