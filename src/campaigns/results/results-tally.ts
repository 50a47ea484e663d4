import { DeliveryStatus } from '../../push/push.types.js';
import { CONTROL } from '../experiments/experiment.js';
import { lift, wilson, type Lift, type RateInterval } from './interval.js';
import type { ConversionCount, OpenCount, OutcomeCount } from './results.repository.js';

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

export type ArmSeries = ArmCounts & { variant: string | null };

export interface ResultsTally {
  totals: ArmCounts & { open_rate: RateInterval | null };
  variants: ArmResult[];
  triggers: Array<{ trigger_id: string; variants: ArmResult[] }>;
  series: Array<{ start: string; variants: ArmSeries[] }>;
}

export interface TallyOptions {
  /** The campaign's goals' events by index. */
  goals: string[];
  /** The campaign's variant ids as listed. */
  variants: string[];
  /** More buckets than this end the tally with `tooMany()`. */
  maxBuckets: number;
  tooMany: () => Error;
}

/** One arm's counts in one scope; conversions and revenue by goal index (holes: not counted). */
interface Cell {
  sent: number;
  delivered: number;
  skipped: number;
  opened: number;
  converted: number[];
  revenue: number[];
}

/** Cells of one scope (the campaign, a trigger, a bucket) by arm id. */
type Scope = Array<Cell | undefined>;

const newCell = (): Cell => ({ sent: 0, delivered: 0, skipped: 0, opened: 0, converted: [], revenue: [] });

/**
 * Rule `campaign-results`: the rollup rows summed per arm for the whole scope, per trigger and per
 * bucket, with rates and lifts for the first two. One pass over the rows into arrays indexed by arm,
 * so a minute series of a day (thousands of buckets) costs a few milliseconds.
 */
export function tallyResults(
  rows: { outcomes: OutcomeCount[]; opens: OpenCount[]; conversions: ConversionCount[] },
  options: TallyOptions,
): ResultsTally {
  const arms: Array<string | null> = [];
  const armIds = new Map<string | null, number>();
  const armOf = (variant: string | null) => {
    let id = armIds.get(variant);
    if (id === undefined) armIds.set(variant, (id = arms.push(variant) - 1));
    return id;
  };
  const totals = newCell();
  const overall: Scope = [];
  const perTrigger = new Map<string, Scope>();
  const buckets = new Map<number, Scope>();
  const cellsOf = (triggerId: string, start: number, arm: number): Cell[] => {
    let t = perTrigger.get(triggerId);
    if (!t) perTrigger.set(triggerId, (t = []));
    let b = buckets.get(start);
    if (!b) {
      if (buckets.size >= options.maxBuckets) throw options.tooMany();
      buckets.set(start, (b = []));
    }
    return [totals, (overall[arm] ??= newCell()), (t[arm] ??= newCell()), (b[arm] ??= newCell())];
  };
  for (const o of rows.outcomes)
    for (const c of cellsOf(o.triggerId, o.start, armOf(o.variant))) {
      if (o.status === DeliveryStatus.SKIPPED) c.skipped += o.count;
      else {
        c.sent += o.count;
        if (o.status === DeliveryStatus.ACCEPTED) c.delivered += o.count;
      }
    }
  for (const o of rows.opens) for (const c of cellsOf(o.triggerId, o.start, armOf(o.variant))) c.opened += o.count;
  for (const o of rows.conversions)
    for (const c of cellsOf(o.triggerId, o.start, armOf(o.variant))) {
      c.converted[o.goalIndex] = (c.converted[o.goalIndex] ?? 0) + o.count;
      c.revenue[o.goalIndex] = (c.revenue[o.goalIndex] ?? 0) + o.revenue;
    }

  const order = armOrder(arms, options.variants);
  const goalCounts = (c: Cell): GoalCounts[] => {
    const out: GoalCounts[] = [];
    for (let i = 0; i < Math.max(options.goals.length, c.converted.length); i++)
      if (i < options.goals.length || c.converted[i] !== undefined)
        out.push({
          goal_index: i,
          event: options.goals[i] ?? null,
          converted: c.converted[i] ?? 0,
          revenue: c.revenue[i] ?? 0,
        });
    return out;
  };
  const countsOf = (scope: Scope): ArmSeries[] =>
    order
      .filter((id) => scope[id] !== undefined)
      .map((id) => {
        const { sent, delivered, skipped, opened } = scope[id]!;
        return { variant: arms[id]!, sent, delivered, skipped, opened, conversions: goalCounts(scope[id]!) };
      });
  const withRates = (scope: Scope) => armResults(countsOf(scope), options.goals.length);
  return {
    totals: {
      sent: totals.sent,
      delivered: totals.delivered,
      skipped: totals.skipped,
      opened: totals.opened,
      conversions: goalCounts(totals),
      open_rate: openRate(totals),
    },
    variants: withRates(overall),
    triggers: [...perTrigger].map(([id, scope]) => ({ trigger_id: id, variants: withRates(scope) })),
    // Counts only: a series point carries no interval, so none is computed for its (up to 10,000) buckets.
    series: [...buckets.keys()]
      .sort((a, b) => a - b)
      .map((start) => ({ start: new Date(start).toISOString(), variants: countsOf(buckets.get(start)!) })),
  };
}

/**
 * Arm ids in the campaign's order: its variants as listed, `default`, others seen (by name), outside
 * an experiment, `control` last.
 */
function armOrder(arms: Array<string | null>, variants: string[]): number[] {
  const listed = [...variants, 'default'];
  const rank = (v: string | null) =>
    v === CONTROL
      ? listed.length + 2
      : v === null
        ? listed.length + 1
        : listed.indexOf(v) < 0
          ? listed.length
          : listed.indexOf(v);
  return arms
    .map((v, id) => ({ id, v, r: rank(v) }))
    .sort((a, b) => a.r - b.r || (a.v ?? '').localeCompare(b.v ?? ''))
    .map((a) => a.id);
}

/** An open may fall in the window while its send does not: the rate counts at most the deliveries. */
const openRate = (c: { opened: number; delivered: number }) => wilson(Math.min(c.opened, c.delivered), c.delivered);

/**
 * Rates and the lift over the baseline: the control when it has a rate for the metric, else the first
 * listed arm with one (the control receives nothing, so its open rate is undefined; conversions,
 * which control users can make, are measured against it).
 */
function armResults(counts: ArmSeries[], goalCount: number): ArmResult[] {
  const withRates = counts.map((c) => ({ ...c, control: c.variant === CONTROL, open_rate: openRate(c) }));
  const liftOver = (rate: (k: number) => RateInterval | null): Array<Lift | null> => {
    const ks = withRates.map((_, k) => k);
    const base =
      ks.find((k) => withRates[k]!.control && rate(k)) ?? ks.find((k) => withRates[k]!.variant !== null && rate(k));
    return ks.map((k) =>
      base !== undefined && k !== base && withRates[k]!.variant !== null && rate(k)
        ? lift(rate(k)!, rate(base)!, withRates[base]!.variant!)
        : null,
    );
  };
  const openLifts = liftOver((k) => withRates[k]!.open_rate);
  // Conversions: each goal's rate over the arm's deliveries, or for the control over its recorded
  // devices (sent nothing, they convert on their record: rule `conversion-goals`), capped as opens.
  const goalsOf = withRates.map((a) => {
    const exposed = a.control ? a.skipped : a.delivered;
    return a.conversions.map((g) => ({ ...g, rate: wilson(Math.min(g.converted, exposed), exposed) }));
  });
  const goalLifts = Array.from({ length: goalCount }, (_, i) => liftOver((k) => goalsOf[k]![i]!.rate));
  return withRates.map((a, k) => ({
    ...a,
    open_rate_lift: openLifts[k]!,
    conversions: goalsOf[k]!.map((g) => ({
      ...g,
      lift: g.goal_index < goalCount ? goalLifts[g.goal_index]![k]! : null,
    })),
  }));
}
