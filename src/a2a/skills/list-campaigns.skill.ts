import { Type } from '@sinclair/typebox';
import { listCampaignOverviews } from '../../campaigns/campaign-overview.service.js';
import type { CampaignStatus } from '../../campaigns/campaigns.schemas.js';
import type { JsonObject } from '../model.js';
import { paramsValidator } from '../versions/codec.js';
import { defineSkill } from './skill.js';

const Input = Type.Object({
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('paused')])),
  pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  pageToken: Type.Optional(Type.String({ maxLength: 512 })),
});
const check = paramsValidator(Input);

export interface ListCampaignsSkillInput {
  status?: CampaignStatus;
  pageSize?: number;
  pageToken?: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * `list-campaigns` {status?, pageSize?, pageToken?} → `campaign-list` {campaigns: [{campaignId, name,
 * status, deliveryTypes, scheduledTriggers, recurringSchedules, nextOccurrences}], nextPageToken}: what an agent needs to
 * choose a campaign for `trigger-campaign` or `preview-campaign`, paged as `GET /api/v1/campaigns`
 * (`nextPageToken` is `""` on the last page, as in ListTasks).
 */
export const listCampaignsSkill = defineSkill<ListCampaignsSkillInput>({
  descriptor: {
    id: 'list-campaigns',
    name: 'List campaigns',
    description:
      "Lists the project's campaigns, newest first: id, name, status (active or paused), delivery types (api_triggered, scheduled, recurring, event_triggered) and the next instants at which each sends. Pages of pageSize (1 to 100, default 50) with pageToken.",
    tags: ['campaigns'],
    examples: ['{"skill":"list-campaigns"}', '{"skill":"list-campaigns","status":"active","pageSize":20}'],
  },
  parse(data, field) {
    const input = check(data, field);
    return {
      ...(input.status !== undefined ? { status: input.status } : {}),
      ...(input.pageSize !== undefined ? { pageSize: input.pageSize } : {}),
      ...(input.pageToken ? { pageToken: input.pageToken } : {}),
    };
  },
  async run({ db, projectId }, input) {
    const page = await listCampaignOverviews(db, projectId, {
      status: input.status,
      limit: input.pageSize,
      cursor: input.pageToken,
    });
    const campaigns = page.campaigns.map((o): JsonObject => ({
      campaignId: o.campaign.campaignId,
      name: o.campaign.name,
      status: o.campaign.status,
      deliveryTypes: o.deliveryTypes,
      scheduledTriggers: o.scheduledTriggers,
      recurringSchedules: o.recurringSchedules,
      nextOccurrences: o.nextOccurrences.map(iso),
    }));
    return { artifactName: 'campaign-list', data: { campaigns, nextPageToken: page.nextCursor ?? '' } };
  },
});
