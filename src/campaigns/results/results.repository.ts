import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { epochBucketStart } from '../../db/dialect.js';

/** Whose results to read: the campaign's triggers, or one of them (already checked to be the campaign's). */
export type ResultsScope = { projectId: string; campaignId: string; triggerId?: string | undefined };

/** Inclusive `from`, exclusive `to`, epoch ms; minute precision for outcomes, opens and conversions (the rollups' grain). */
export interface ResultsWindow {
  from?: number | undefined;
  to?: number | undefined;
}

/** Outcomes of one (trigger, bucket, status, variant) from the per-minute rollup; variant null outside an experiment. */
export interface OutcomeCount {
  triggerId: string;
  start: number;
  status: string;
  variant: string | null;
  count: number;
}

/** Opens of one (trigger, bucket, variant); variant null outside an experiment. */
export interface OpenCount {
  triggerId: string;
  start: number;
  variant: string | null;
  count: number;
}

const MINUTE = 60_000;

/** The rollups' `''` is no variant: every count answers null for it, as opens' and conversions' rows hold. */
const variantOf = (v: string): string | null => (v === '' ? null : v);

const campaignTriggerIds = (db: Db, scope: ResultsScope) =>
  db
    .selectFrom('campaign_triggers')
    .select('id')
    .where('project_id', '=', scope.projectId)
    .where('campaign_id', '=', scope.campaignId);

/**
 * The scope and window as one condition over a table with `trigger_id` and the time column `at`
 * (epoch ms): the trigger (or the campaign's triggers), and the minutes from the one holding `from`
 * to those starting before `to` (the rollups' grain).
 */
function inScope(db: Db, scope: ResultsScope, window: ResultsWindow, at: string) {
  const conditions = [
    scope.triggerId !== undefined
      ? sql`trigger_id = ${scope.triggerId}`
      : sql`trigger_id in (${campaignTriggerIds(db, scope)})`,
  ];
  if (window.from !== undefined) conditions.push(sql`${sql.ref(at)} >= ${Math.floor(window.from / MINUTE) * MINUTE}`);
  if (window.to !== undefined) conditions.push(sql`${sql.ref(at)} < ${window.to}`);
  return sql<boolean>`${sql.join(conditions, sql` and `)}`;
}

/**
 * Outcome counts per (trigger, bucket, status, variant), from the rollup
 * `trigger_delivery_counts` (migration 0015): its rows per trigger are minutes × states × providers ×
 * reasons × variants, so the read is independent of how many devices were sent to. At most `limit`.
 */
export async function countOutcomesByVariant(
  db: Db,
  scope: ResultsScope,
  window: ResultsWindow,
  bucketMs: number,
  limit: number,
): Promise<OutcomeCount[]> {
  const rows = await db
    .selectFrom('trigger_delivery_counts')
    .where(inScope(db, scope, window, 'minute'))
    .select([
      'trigger_id',
      epochBucketStart(db, 'minute', bucketMs).as('start'),
      'status',
      'variant',
      sql<number>`sum(n)`.as('n'),
    ])
    .groupBy(['trigger_id', sql`2`, 'status', 'variant'])
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    triggerId: r.trigger_id,
    start: Number(r.start),
    status: r.status,
    variant: variantOf(r.variant),
    count: Number(r.n),
  }));
}

/**
 * Opens per (trigger, bucket, variant), by the minute they happened, from the
 * rollup `trigger_open_counts` (migration 0051; PostgreSQL's partial rows summed): minutes ×
 * variants per trigger, however many opens. At most `limit`.
 */
export async function countOpensByVariant(
  db: Db,
  scope: ResultsScope,
  window: ResultsWindow,
  bucketMs: number,
  limit: number,
): Promise<OpenCount[]> {
  const rows = await db
    .selectFrom('trigger_open_counts')
    .where(inScope(db, scope, window, 'minute'))
    .select([
      'trigger_id',
      epochBucketStart(db, 'minute', bucketMs).as('start'),
      'variant',
      sql<number>`sum(n)`.as('n'),
    ])
    .groupBy(['trigger_id', sql`2`, 'variant'])
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    triggerId: r.trigger_id,
    start: Number(r.start),
    variant: variantOf(r.variant),
    count: Number(r.n),
  }));
}

/** Conversions of one (trigger, bucket, goal, variant) with their revenue; variant null outside an experiment. */
export interface ConversionCount {
  triggerId: string;
  start: number;
  goalIndex: number;
  variant: string | null;
  count: number;
  revenue: number;
}

/**
 * Conversions (rule `conversion-goals`) per (trigger, bucket, goal, variant), by
 * the minute of `converted_at`, from the rollup `trigger_conversion_counts` (migration 0051). At most `limit`.
 */
export async function countConversionsByVariant(
  db: Db,
  scope: ResultsScope,
  window: ResultsWindow,
  bucketMs: number,
  limit: number,
): Promise<ConversionCount[]> {
  const rows = await db
    .selectFrom('trigger_conversion_counts')
    .where(inScope(db, scope, window, 'minute'))
    .select([
      'trigger_id',
      epochBucketStart(db, 'minute', bucketMs).as('start'),
      'goal_index',
      'variant',
      sql<number>`sum(n)`.as('n'),
      sql<number>`sum(revenue)`.as('revenue'),
    ])
    .groupBy(['trigger_id', sql`2`, 'goal_index', 'variant'])
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    triggerId: r.trigger_id,
    start: Number(r.start),
    goalIndex: Number(r.goal_index),
    variant: variantOf(r.variant),
    count: Number(r.n),
    revenue: Number(r.revenue),
  }));
}
