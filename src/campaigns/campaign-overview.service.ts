import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import { listCampaigns, type Campaign } from './campaigns.service.js';
import type { CampaignStatus } from './campaigns.schemas.js';

/** How a campaign reaches users (the vocabulary of `docs/campaigns.md`). */
export type DeliveryType = 'api_triggered' | 'scheduled' | 'recurring' | 'event_triggered';

/** A campaign as an agent sees it in a list: what it is, how it sends and when it sends next. */
export interface CampaignOverview {
  campaign: Campaign;
  deliveryTypes: DeliveryType[];
  /** Triggers waiting for their `schedule.at`. */
  scheduledTriggers: number;
  /** Recurring schedules that still fire (active). */
  recurringSchedules: number;
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

/** Each campaign's active recurring schedules: their count and their next occurrences, one read for a page. */
async function activeSchedulesOf(
  db: Db,
  projectId: string,
  campaignIds: readonly string[],
): Promise<Map<string, number[]>> {
  if (campaignIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('campaign_schedules')
    .select(['campaign_id', 'next_occurrence_at'])
    .where('project_id', '=', projectId)
    .where('campaign_id', 'in', campaignIds)
    .where('state', '=', 'active')
    .execute();
  const next = new Map<string, number[]>();
  for (const row of rows) {
    const list = next.get(row.campaign_id) ?? [];
    if (row.next_occurrence_at !== null) list.push(Number(row.next_occurrence_at));
    next.set(row.campaign_id, list);
  }
  return next;
}

// An agent plans with the next few sends; a campaign with dozens of schedules lists its earliest.
const NEXT_OCCURRENCES = 5;

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
  const ids = page.campaigns.map((c) => c.campaignId);
  const [scheduled, recurring] = await Promise.all([
    scheduledTriggersOf(db, projectId, ids),
    activeSchedulesOf(db, projectId, ids),
  ]);
  const campaigns = page.campaigns.map((campaign): CampaignOverview => {
    const waiting = scheduled.get(campaign.campaignId);
    const deliveryTypes: DeliveryType[] = [];
    if (campaign.apiTriggered) deliveryTypes.push('api_triggered');
    const schedules = recurring.get(campaign.campaignId);
    if (waiting) deliveryTypes.push('scheduled');
    if (schedules) deliveryTypes.push('recurring');
    if (campaign.eventTrigger !== null) deliveryTypes.push('event_triggered');
    const next = [...(waiting ? [waiting.next] : []), ...(schedules ?? [])];
    return {
      campaign,
      deliveryTypes,
      scheduledTriggers: waiting?.count ?? 0,
      recurringSchedules: schedules?.length ?? 0,
      nextOccurrences: [...new Set(next)].sort((a, b) => a - b).slice(0, NEXT_OCCURRENCES),
    };
  });
  return { campaigns, nextCursor: page.nextCursor };
}
