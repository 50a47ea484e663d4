import type { Db } from '../../db/database.js';
import { AppError } from '../../errors.js';
import { parseIsoTimestamp } from '../../events/events.service.js';
import { DeliveryStatus } from '../../push/push.types.js';
import { getCampaign } from '../campaigns.service.js';
import { CONTROL } from '../experiments/experiment.js';
import { findCampaignTrigger } from '../triggers/triggers.repository.js';
import { CONFIDENCE_LEVEL, lift, wilson, type Lift, type RateInterval } from './interval.js';
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

export interface ArmCounts {
  /** Devices handed to a provider (every outcome but `SKIPPED`). */
  sent: number;
  /** Of those, accepted by the provider. */
  delivered: number;
  /** Recorded `SKIPPED` (the control group's devices: reason `CONTROL`). */
  skipped: number;
  opened: number;
  /** Per conversion goal of the campaign (rule `conversion-goals`), by `converted_at`. */
  conversions: GoalCounts[];
}

export interface GoalCounts {
  goal_index: number;
  /** The goal's event; null for a goal since removed from the campaign. */
  event: string | null;
  converted: number;
  revenue: number;
}

/** A goal of one arm: converted / delivered with its interval, and the lift over the baseline as for opens. */
export interface GoalResult extends GoalCounts {
  rate: RateInterval | null;
  lift: Lift | null;
}

/** One arm of the experiment: a variant id, `default`, `control`, or null (sent outside an experiment). */
export interface ArmResult extends ArmCounts {
  variant: string | null;
  control: boolean;
  /** opened / delivered with its 95% Wilson interval; null without deliveries. */
  open_rate: RateInterval | null;
  /** Difference from the baseline arm's open rate (Newcombe interval) and relative lift; null for the baseline and outside an experiment. */
  open_rate_lift: Lift | null;
  conversions: GoalResult[];
}

export interface CampaignResults {
  campaign_id: string;
  trigger_id: string | null;
  granularity: Granularity;
  from: string | null;
  to: string | null;
  confidence_level: number;
  totals: ArmCounts & { open_rate: RateInterval | null };
  variants: ArmResult[];
  triggers: Array<{ trigger_id: string; variants: ArmResult[] }>;
  series: Array<{ start: string; variants: Array<ArmCounts & { variant: string | null }> }>;
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

/** Counts per arm, keyed by variant. */
type Cells = Map<string, ArmCounts & { variant: string | null }>;

const empty = (): ArmCounts => ({ sent: 0, delivered: 0, skipped: 0, opened: 0, conversions: [] });

function addConversion(into: ArmCounts, goalIndex: number, n: number, revenue: number, goals: string[]) {
  let g = into.conversions.find((c) => c.goal_index === goalIndex);
  if (!g) {
    g = { goal_index: goalIndex, event: goals[goalIndex] ?? null, converted: 0, revenue: 0 };
    into.conversions.push(g);
  }
  g.converted += n;
  g.revenue += revenue;
}

/** Every current goal (zeros included) and any counted goal since removed, by index. */
function withAllGoals(counts: GoalCounts[], goals: string[]): GoalCounts[] {
  const out = goals.map(
    (event, i) => counts.find((c) => c.goal_index === i) ?? { goal_index: i, event, converted: 0, revenue: 0 },
  );
  for (const c of counts) if (c.goal_index >= goals.length) out.push(c);
  return out.sort((a, b) => a.goal_index - b.goal_index);
}
/** `''` in the rollup, null in opens: outside an experiment. */
const armKey = (variant: string | null) => (variant === '' ? null : variant);
const keyOf = (variant: string | null) => variant ?? '\u0000';

function addOutcome(into: ArmCounts, status: string, n: number) {
  if (status === DeliveryStatus.SKIPPED) into.skipped += n;
  else {
    into.sent += n;
    if (status === DeliveryStatus.ACCEPTED) into.delivered += n;
  }
}

/** An open may fall in the window while its send does not: the rate counts at most the deliveries. */
const openRate = (c: ArmCounts) => wilson(Math.min(c.opened, c.delivered), c.delivered);

/** The arms in the campaign's order (its variants as listed, `default`, others seen, outside an experiment, `control` last). */
function orderedArms(counts: Cells, order: string[]): Array<ArmCounts & { variant: string | null }> {
  const rank = (v: string | null) =>
    v === CONTROL
      ? order.length + 2
      : v === null
        ? order.length + 1
        : order.indexOf(v) < 0
          ? order.length
          : order.indexOf(v);
  return [...counts.values()].sort((a, b) => rank(a.variant) - rank(b.variant));
}

/**
 * The arms in the campaign's order (`orderedArms`) with rates and the lift over the baseline: the control when it has
 * a rate for the metric, else the first listed arm with one (the control receives nothing, so its
 * open rate is undefined; conversions, which control users can make, are measured against it).
 */
function arms(counts: Cells, order: string[], goals: string[]): ArmResult[] {
  const withRates = orderedArms(counts, order).map((c) => ({
    ...c,
    control: c.variant === CONTROL,
    open_rate: openRate(c),
  }));
  const liftOver = <A extends { variant: string | null; control: boolean }>(
    arms: A[],
    rate: (a: A) => RateInterval | null,
  ): Array<Lift | null> => {
    const baseline = arms.find((a) => a.control && rate(a)) ?? arms.find((a) => a.variant !== null && rate(a));
    return arms.map((a) =>
      baseline && a !== baseline && a.variant !== null && rate(a)
        ? lift(rate(a)!, rate(baseline)!, baseline.variant!)
        : null,
    );
  };
  const openLifts = liftOver(withRates, (a) => a.open_rate);
  // Conversions: each goal's rate over the arm's deliveries, or for the control over its recorded
  // devices (sent nothing, they convert on their record: rule `conversion-goals`), capped as opens;
  // lift as for opens, so the control is the baseline where it exists.
  const goalsOf = withRates.map((a) => {
    const exposed = a.control ? a.skipped : a.delivered;
    return withAllGoals(a.conversions, goals).map((g) => ({
      ...g,
      rate: wilson(Math.min(g.converted, exposed), exposed),
    }));
  });
  const goalLifts = goals.map((_, i) => liftOver(withRates, (a) => goalsOf[withRates.indexOf(a)]![i]!.rate));
  return withRates.map((a, k) => ({
    ...a,
    open_rate_lift: openLifts[k]!,
    conversions: goalsOf[k]!.map((g) => ({
      ...g,
      lift: g.goal_index < goals.length ? goalLifts[g.goal_index]![k]! : null,
    })),
  }));
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
  const goals = campaign.conversionGoals.map((g) => g.event);

  const overall: Cells = new Map();
  const perTrigger = new Map<string, Cells>();
  const buckets = new Map<number, Cells>();
  const totals = empty();
  const cell = (map: Cells, variant: string | null) => {
    let c = map.get(keyOf(variant));
    if (!c) map.set(keyOf(variant), (c = { variant, ...empty() }));
    return c;
  };
  const bucket = (start: number) => {
    let b = buckets.get(start);
    if (!b) {
      if (buckets.size >= MAX_RESULT_BUCKETS) throw tooMany(granularity);
      b = new Map();
      buckets.set(start, b);
    }
    return b;
  };
  const triggerArms = (id: string) => {
    let t = perTrigger.get(id);
    if (!t) {
      t = new Map();
      perTrigger.set(id, t);
    }
    return t;
  };
  for (const o of outcomes) {
    const v = armKey(o.variant);
    for (const c of [cell(overall, v), cell(triggerArms(o.triggerId), v), cell(bucket(o.start), v), totals])
      addOutcome(c, o.status, o.count);
  }
  for (const o of opens) {
    const v = armKey(o.variant);
    for (const c of [cell(overall, v), cell(triggerArms(o.triggerId), v), cell(bucket(o.start), v), totals])
      c.opened += o.count;
  }
  for (const o of conversions) {
    const v = armKey(o.variant);
    for (const c of [cell(overall, v), cell(triggerArms(o.triggerId), v), cell(bucket(o.start), v), totals])
      addConversion(c, o.goalIndex, o.count, o.revenue, goals);
  }

  const order = [...campaign.experiment.variants.map((v) => v.variant_id), 'default'];
  const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  return {
    campaign_id: campaignId,
    trigger_id: triggerId ?? null,
    granularity,
    from: iso(window.from),
    to: iso(window.to),
    confidence_level: CONFIDENCE_LEVEL,
    totals: { ...totals, conversions: withAllGoals(totals.conversions, goals), open_rate: openRate(totals) },
    variants: arms(overall, order, goals),
    triggers: [...perTrigger].map(([id, m]) => ({ trigger_id: id, variants: arms(m, order, goals) })),
    series: [...buckets]
      .sort(([a], [b]) => a - b)
      .map(([start, m]) => ({
        start: new Date(start).toISOString(),
        // Counts only: a series point carries no interval, so none is computed for its (up to 10,000) buckets.
        variants: orderedArms(m, order).map(({ variant, sent, delivered, skipped, opened, conversions }) => ({
          variant,
          sent,
          delivered,
          skipped,
          opened,
          conversions: withAllGoals(conversions, goals),
        })),
      })),
  };
}
