import { Type } from '@sinclair/typebox';
import { campaignResults } from '../../campaigns/results/results.service.js';
import type { JsonObject } from '../model.js';
import { paramsValidator } from '../versions/codec.js';
import { defineSkill } from './skill.js';

const Input = Type.Object({
  campaignId: Type.String({ minLength: 1, maxLength: 255 }),
  triggerId: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  granularity: Type.Optional(Type.Union([Type.Literal('minute'), Type.Literal('hour'), Type.Literal('day')])),
  from: Type.Optional(Type.String({ maxLength: 64 })),
  to: Type.Optional(Type.String({ maxLength: 64 })),
});
const check = paramsValidator(Input);

export interface GetCampaignStatsInput {
  campaignId: string;
  triggerId?: string;
  granularity?: string;
  from?: string;
  to?: string;
}

/**
 * `get-campaign-stats` {campaignId, triggerId?, granularity?, from?, to?} → `campaign-results`: the
 * REST `GET /api/v1/campaigns/{campaign_id}/results` answer as it is (snake_case), from the same
 * service (rule `campaign-results`).
 */
export const getCampaignStatsSkill = defineSkill<GetCampaignStatsInput>({
  descriptor: {
    id: 'get-campaign-stats',
    name: 'Get campaign results',
    description:
      'Did a campaign work: per variant (and control group) the devices sent to, delivered and opened, the open rate with its 95% interval, the lift over the baseline, and a time series (granularity minute, hour or day). The REST GET /api/v1/campaigns/{campaign_id}/results answer.',
    tags: ['campaigns', 'analytics'],
    examples: [
      '{"skill":"get-campaign-stats","campaignId":"spring-sale-test"}',
      '{"skill":"get-campaign-stats","campaignId":"spring-sale-test","granularity":"hour","from":"2026-03-02T00:00:00Z"}',
    ],
  },
  parse(data, field) {
    const input = check(data, field);
    return {
      campaignId: input.campaignId,
      ...(input.triggerId !== undefined && { triggerId: input.triggerId }),
      ...(input.granularity !== undefined && { granularity: input.granularity }),
      ...(input.from !== undefined && { from: input.from }),
      ...(input.to !== undefined && { to: input.to }),
    };
  },
  async run({ deps, db, projectId }, input) {
    const results = await campaignResults(deps.readDb ?? db, projectId, input.campaignId, {
      trigger_id: input.triggerId,
      granularity: input.granularity,
      from: input.from,
      to: input.to,
    });
    return { artifactName: 'campaign-results', data: results as unknown as JsonObject };
  },
});
