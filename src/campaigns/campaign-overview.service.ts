import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import { listCampaigns, type Campaign } from './campaigns.service.js';
import type { CampaignStatus } from './campaigns.schemas.js';

/** How a campaign reaches users (the vocabulary of `docs/campaigns.md`). */
export type DeliveryType = 'api_triggered' | 'scheduled' | 'event_triggered';

/** A campaign as an agent sees it in a list: what it is, how it sends and when it sends next. */
export interface CampaignOverview {
  campaign: Campaign;
  deliveryTypes: DeliveryType[];
  /** Triggers waiting for their `schedule.at`. */
  scheduledTriggers: number;
  /** The instants at which the campaign sends next, earliest first (epoch ms). */
  nextOccurrences: number[];
}

/** When each campaign's scheduled triggers fire: their count and the earliest, one grouped read for a page. */
async function scheduledTriggersOf(
  db: Db,
  projectId: string,
  campaignIds: readonly string[],
): Promise<Map<string, { count: number; next: number }>> {
  if (campaignIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('campaign_triggers')
    .select((eb) => [
      'campaign_id',
      eb.fn.countAll<number | string>().as('count'),
      eb.fn.min('scheduled_at').as('next'),
    ])
    .where('project_id', '=', projectId)
    .where('campaign_id', 'in', campaignIds)
    .where(sql.ref('state'), '=', sql.lit('scheduled')) // a literal: the partial index of migration 0028
    .groupBy('campaign_id')
    .execute();
  return new Map(rows.map((r) => [r.campaign_id, { count: Number(r.count), next: Number(r.next) }]));
}

/**
 * A page of the project's campaigns with their delivery types and next occurrences (the A2A
 * `list-campaigns` skill). Paged like `GET /api/v1/campaigns`: newest first, an opaque cursor.
 */
export async function listCampaignOverviews(
  db: Db,
  projectId: string,
  query: { limit?: number | undefined; cursor?: string | undefined; status?: CampaignStatus | undefined },
): Promise<{ campaigns: CampaignOverview[]; nextCursor: string | null }> {
  const page = await listCampaigns(db, projectId, query);
  const scheduled = await scheduledTriggersOf(
    db,
    projectId,
    page.campaigns.map((c) => c.campaignId),
  );
  const campaigns = page.campaigns.map((campaign): CampaignOverview => {
    const waiting = scheduled.get(campaign.campaignId);
    const deliveryTypes: DeliveryType[] = [];
    if (campaign.apiTriggered) deliveryTypes.push('api_triggered');
    if (waiting) deliveryTypes.push('scheduled');
    if (campaign.eventTrigger !== null) deliveryTypes.push('event_triggered');
    return {
      campaign,
      deliveryTypes,
      scheduledTriggers: waiting?.count ?? 0,
      nextOccurrences: waiting ? [waiting.next] : [],
    };
  });
  return { campaigns, nextCursor: page.nextCursor };
}
