import type { Db } from '../../db/database.js';
import { AppError } from '../../errors.js';
import { parseIsoTimestamp } from '../../events/events.service.js';
import { findCampaign, getCampaign, type Campaign } from '../campaigns.service.js';
import { countConversions, goalConversions, type GoalConversions } from '../conversions/conversions.repository.js';

const goalEventsOf = (campaign: Campaign) => campaign.conversionGoals.map((g) => g.event);
import { DeliveryStatus } from '../../push/push.types.js';
import {
  countAudienceSkips,
  countOutcomes,
  type AnalyticsScope,
  type AnalyticsWindow,
} from './delivery-analytics.repository.js';
import { findCampaignTrigger } from '../triggers/triggers.repository.js';
import { countOpens } from '../../push/message-opens.service.js';

export const BUCKETS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;
export type Bucket = keyof typeof BUCKETS;
const MINUTE = BUCKETS.minute;
/** A series longer than this is refused (a finer bucket than the range needs): choose a coarser one or narrow the window. */
export const MAX_SERIES_BUCKETS = 10_000;
/** Groups read at most: (bucket, state, provider, reason) combinations; a bucket rarely holds more than a few dozen. */
const MAX_GROUPS = 200_000;
/** Outcomes without a provider (render skips recorded before migration 0015). */
const UNKNOWN_PROVIDER = 'unknown';

export interface AnalyticsQuery {
  bucket?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

export interface DeliveryAnalytics {
  bucket: Bucket;
  totals: {
    by_state: Record<string, number>;
    by_provider: Record<string, Record<string, number>>;
    by_reason: Record<string, number>;
    /** Audience members not sent to, by reason (rule `trigger-status`), and `HELD` by quiet hours. */
    users_by_reason: Record<string, number>;
    opened: number;
    /** Rule `conversion-goals`: per goal of the campaign, by `converted_at` in the window. */
    conversions: GoalConversions[];
    /** Rule `campaign-experiments`: device outcomes per variant id (and `control`). */
    by_variant: Record<string, { sent: number; failed: number; skipped: number }>;
  };
  series: Array<{ start: string; sent: number; failed: number; skipped: number; opened: number }>;
}

const invalid = (code: string, message: string) => new AppError('invalid', code, message);

function parseInstant(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = parseIsoTimestamp(value);
  if (!Number.isFinite(ms)) throw invalid('INVALID_ANALYTICS_WINDOW', `${name} must be an ISO 8601 date-time`);
  return ms;
}

/** The query's bucket (default `hour`) and window, or a 400 naming what is wrong. */
export function parseAnalyticsQuery(query: AnalyticsQuery): { bucket: Bucket; window: AnalyticsWindow } {
  const bucket = query.bucket ?? 'hour';
  if (!Object.hasOwn(BUCKETS, bucket))
    throw invalid('INVALID_ANALYTICS_BUCKET', 'bucket must be one of minute, hour, day');
  const window = { since: parseInstant(query.since, 'since'), until: parseInstant(query.until, 'until') };
  if (window.since !== undefined && window.until !== undefined && window.since >= window.until)
    throw invalid('INVALID_ANALYTICS_WINDOW', 'since must be before until');
  return { bucket: bucket as Bucket, window };
}

const add = (into: Record<string, number>, key: string, n: number) => {
  into[key] = (into[key] ?? 0) + n;
};

async function analyticsOf(
  db: Db,
  scope: AnalyticsScope,
  query: AnalyticsQuery,
  goalEvents: string[],
): Promise<DeliveryAnalytics> {
  const { bucket, window } = parseAnalyticsQuery(query);
  const groups = await countOutcomes(db, scope, window, BUCKETS[bucket], MAX_GROUPS + 1);
  const tooMany = () =>
    invalid(
      'TOO_MANY_ANALYTICS_BUCKETS',
      `more than ${MAX_SERIES_BUCKETS} ${bucket} buckets: choose a coarser bucket or a narrower since/until`,
    );
  if (groups.length > MAX_GROUPS) throw tooMany();
  // Whole minutes, as the outcomes' rollup counts them.
  const minutes = {
    since: window.since === undefined ? undefined : Math.floor(window.since / MINUTE) * MINUTE,
    until: window.until === undefined ? undefined : Math.ceil(window.until / MINUTE) * MINUTE,
  };
  const opens = await countOpens(db, scope, minutes, BUCKETS[bucket], MAX_SERIES_BUCKETS + 1);
  if (opens.length > MAX_SERIES_BUCKETS) throw tooMany();
  const totals: DeliveryAnalytics['totals'] = {
    by_state: {},
    by_provider: {},
    by_reason: {},
    users_by_reason: await countAudienceSkips(db, scope, window),
    opened: 0,
    conversions: goalConversions(goalEvents, await countConversions(db, scope, window)),
    by_variant: {},
  };
  const series: DeliveryAnalytics['series'] = [];
  let currentStart: number | undefined;
  // Groups come oldest bucket first, so each bucket's groups are adjacent.
  for (const g of groups) {
    add(totals.by_state, g.status, g.count);
    add((totals.by_provider[g.provider ?? UNKNOWN_PROVIDER] ??= {}), g.status, g.count);
    if (g.reason !== null) add(totals.by_reason, g.reason, g.count);
    if (g.variant !== null) {
      const v = (totals.by_variant[g.variant] ??= { sent: 0, failed: 0, skipped: 0 });
      if (g.status === DeliveryStatus.ACCEPTED) v.sent += g.count;
      else if (g.status === DeliveryStatus.SKIPPED) v.skipped += g.count;
      else v.failed += g.count;
    }
    if (currentStart !== g.start) {
      if (series.length >= MAX_SERIES_BUCKETS) throw tooMany();
      currentStart = g.start;
      series.push({ start: new Date(g.start).toISOString(), sent: 0, failed: 0, skipped: 0, opened: 0 });
    }
    const last = series[series.length - 1]!;
    if (g.status === DeliveryStatus.ACCEPTED) last.sent += g.count;
    else if (g.status === DeliveryStatus.SKIPPED) last.skipped += g.count;
    else last.failed += g.count;
  }
  return { bucket, totals, series: withOpens(series, opens, totals, tooMany) };
}

/** Adds the opens per bucket into the series (both oldest first), with buckets of opens alone in place. */
function withOpens(
  series: DeliveryAnalytics['series'],
  opens: Array<{ start: number; count: number }>,
  totals: DeliveryAnalytics['totals'],
  tooMany: () => Error,
): DeliveryAnalytics['series'] {
  if (opens.length === 0) return series;
  const merged: DeliveryAnalytics['series'] = [];
  let k = 0;
  for (const o of opens) {
    totals.opened += o.count;
    const start = new Date(o.start).toISOString();
    // ISO strings of one format order as their instants.
    while (k < series.length && series[k]!.start < start) merged.push(series[k++]!);
    if (k < series.length && series[k]!.start === start) {
      series[k]!.opened = o.count;
      merged.push(series[k++]!);
    } else merged.push({ start, sent: 0, failed: 0, skipped: 0, opened: o.count });
  }
  while (k < series.length) merged.push(series[k++]!);
  if (merged.length > MAX_SERIES_BUCKETS) throw tooMany();
  return merged;
}

/** Outcome counts and their time series over every trigger of a campaign (404 for another project's). */
export async function campaignAnalytics(
  db: Db,
  projectId: string,
  campaignId: string,
  query: AnalyticsQuery,
): Promise<DeliveryAnalytics> {
  parseAnalyticsQuery(query);
  const campaign = await getCampaign(db, projectId, campaignId);
  return analyticsOf(db, { projectId, campaignId }, query, goalEventsOf(campaign));
}

/** The same for one trigger of the campaign. */
export async function triggerAnalytics(
  db: Db,
  projectId: string,
  campaignId: string,
  triggerId: string,
  query: AnalyticsQuery,
): Promise<DeliveryAnalytics> {
  parseAnalyticsQuery(query);
  const trigger = await findCampaignTrigger(db, projectId, campaignId, triggerId);
  if (!trigger) {
    await getCampaign(db, projectId, campaignId);
    throw new AppError(
      'not_found',
      'TRIGGER_NOT_FOUND',
      `Trigger ${triggerId} does not exist for campaign ${campaignId}`,
    );
  }
  const campaign = await findCampaign(db, projectId, campaignId);
  return analyticsOf(db, { triggerId }, query, campaign ? goalEventsOf(campaign) : []);
}
