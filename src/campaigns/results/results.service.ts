import type { Db } from '../../db/database.js';
import { AppError } from '../../errors.js';
import { parseIsoTimestamp } from '../../events/events.service.js';
import { getCampaign } from '../campaigns.service.js';
import { findCampaignTrigger } from '../triggers/triggers.repository.js';
import { CONFIDENCE_LEVEL } from './interval.js';
import { tallyResults, type ResultsTally } from './results-tally.js';
import {
  countConversionsByVariant,
  countOpensByVariant,
  countOutcomesByVariant,
  type ResultsScope,
  type ResultsWindow,
} from './results.repository.js';

export const GRANULARITIES = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;
export type Granularity = keyof typeof GRANULARITIES;
/** A longer series is refused: choose a coarser granularity or a narrower from/to. */
export const MAX_RESULT_BUCKETS = 10_000;
/** Rollup groups read at most: (trigger, bucket, state, variant) combinations. */
const MAX_GROUPS = 200_000;

export interface ResultsQuery {
  trigger_id?: string | undefined;
  granularity?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
}

export interface CampaignResults extends ResultsTally {
  campaign_id: string;
  trigger_id: string | null;
  granularity: Granularity;
  from: string | null;
  to: string | null;
  confidence_level: number;
}

const invalid = (code: string, message: string) => new AppError('invalid', code, message);

function instant(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = parseIsoTimestamp(value);
  if (!Number.isFinite(ms)) throw invalid('INVALID_RESULTS_WINDOW', `${name} must be an ISO 8601 date-time`);
  return ms;
}

/** The granularity (default `day`) and window, or a 400 naming what is wrong. */
export function parseResultsQuery(query: ResultsQuery): { granularity: Granularity; window: ResultsWindow } {
  const granularity = query.granularity ?? 'day';
  if (!Object.hasOwn(GRANULARITIES, granularity))
    throw invalid('INVALID_RESULTS_GRANULARITY', 'granularity must be one of minute, hour, day');
  const window = { from: instant(query.from, 'from'), to: instant(query.to, 'to') };
  if (window.from !== undefined && window.to !== undefined && window.from >= window.to)
    throw invalid('INVALID_RESULTS_WINDOW', 'from must be before to');
  return { granularity: granularity as Granularity, window };
}

const tooMany = (granularity: Granularity) =>
  invalid(
    'TOO_MANY_RESULT_BUCKETS',
    `more than ${MAX_RESULT_BUCKETS} ${granularity} buckets: choose a coarser granularity or a narrower from/to`,
  );

/**
 * Rule `campaign-results`: per campaign (or one of its triggers), per trigger and per variant
 * (control included), the sends, deliveries and opens with the open rate's 95% interval and the
 * lift over the baseline, and their series per time bucket; read from the per-minute rollups of
 * deliveries, opens and conversions, never the ledger. 404 for another project's campaign or a trigger not of it.
 */
export async function campaignResults(
  db: Db,
  projectId: string,
  campaignId: string,
  query: ResultsQuery,
): Promise<CampaignResults> {
  const { granularity, window } = parseResultsQuery(query);
  const campaign = await getCampaign(db, projectId, campaignId);
  const triggerId = query.trigger_id;
  if (triggerId !== undefined && !(await findCampaignTrigger(db, projectId, campaignId, triggerId)))
    throw new AppError(
      'not_found',
      'TRIGGER_NOT_FOUND',
      `Trigger ${triggerId} does not exist for campaign ${campaignId}`,
    );
  const scope: ResultsScope = { projectId, campaignId, triggerId };
  const bucketMs = GRANULARITIES[granularity];
  // Three independent reads: on PostgreSQL they run at once on the pool's connections.
  const [outcomes, opens, conversions] = await Promise.all([
    countOutcomesByVariant(db, scope, window, bucketMs, MAX_GROUPS + 1),
    countOpensByVariant(db, scope, window, bucketMs, MAX_GROUPS + 1),
    countConversionsByVariant(db, scope, window, bucketMs, MAX_GROUPS + 1),
  ]);
  if (outcomes.length > MAX_GROUPS || opens.length > MAX_GROUPS || conversions.length > MAX_GROUPS)
    throw tooMany(granularity);
  const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  return {
    campaign_id: campaignId,
    trigger_id: triggerId ?? null,
    granularity,
    from: iso(window.from),
    to: iso(window.to),
    confidence_level: CONFIDENCE_LEVEL,
    ...tallyResults(
      { outcomes, opens, conversions },
      {
        goals: campaign.conversionGoals.map((g) => g.event),
        variants: campaign.experiment.variants.map((v) => v.variant_id),
        maxBuckets: MAX_RESULT_BUCKETS,
        tooMany: () => tooMany(granularity),
      },
    ),
  };
}
