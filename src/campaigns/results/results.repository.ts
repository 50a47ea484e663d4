import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { epochBucketStart } from '../../db/dialect.js';

/** Whose results to read: the campaign's triggers, or one of them (already checked to be the campaign's). */
export type ResultsScope = { projectId: string; campaignId: string; triggerId?: string | undefined };

/** Inclusive `from`, exclusive `to`, epoch ms; minute precision for outcomes (the rollup's grain). */
export interface ResultsWindow {
  from?: number | undefined;
  to?: number | undefined;
}

/** Outcomes of one (trigger, bucket, status, variant) from the per-minute rollup; variant `''` outside an experiment. */
export interface OutcomeCount {
  triggerId: string;
  start: number;
  status: string;
  variant: string;
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

const campaignTriggerIds = (db: Db, scope: ResultsScope) =>
  db
    .selectFrom('campaign_triggers')
    .select('id')
    .where('project_id', '=', scope.projectId)
    .where('campaign_id', '=', scope.campaignId);

/**
 * Outcome counts per (trigger, bucket, status, variant), oldest bucket first, from the rollup
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
  let query = db.selectFrom('trigger_delivery_counts');
  query =
    scope.triggerId !== undefined
      ? query.where('trigger_id', '=', scope.triggerId)
      : query.where('trigger_id', 'in', campaignTriggerIds(db, scope));
  if (window.from !== undefined) query = query.where('minute', '>=', Math.floor(window.from / MINUTE) * MINUTE);
  if (window.to !== undefined) query = query.where('minute', '<', window.to);
  const rows = await query
    .select([
      'trigger_id',
      epochBucketStart(db, 'minute', bucketMs).as('start'),
      'status',
      'variant',
      sql<number>`sum(n)`.as('n'),
    ])
    .groupBy(['trigger_id', sql`2`, 'status', 'variant'])
    .orderBy(sql`2`)
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    triggerId: r.trigger_id,
    start: Number(r.start),
    status: r.status,
    variant: r.variant,
    count: Number(r.n),
  }));
}

/**
 * Opens per (trigger, bucket, variant), oldest bucket first, by when they happened, through the
 * index `message_opens_by_trigger` (trigger, opened_at, variant: migration 0050), which holds every
 * column read. At most `limit`.
 */
export async function countOpensByVariant(
  db: Db,
  scope: ResultsScope,
  window: ResultsWindow,
  bucketMs: number,
  limit: number,
): Promise<OpenCount[]> {
  let query = db.selectFrom('message_opens').where('trigger_id', 'is not', null);
  query =
    scope.triggerId !== undefined
      ? query.where('trigger_id', '=', scope.triggerId)
      : query.where('trigger_id', 'in', campaignTriggerIds(db, scope));
  if (window.from !== undefined) query = query.where('opened_at', '>=', window.from);
  if (window.to !== undefined) query = query.where('opened_at', '<', window.to);
  const rows = await query
    .select([
      'trigger_id',
      epochBucketStart(db, 'opened_at', bucketMs).as('start'),
      'variant',
      sql<number>`count(*)`.as('n'),
    ])
    .groupBy(['trigger_id', sql`2`, 'variant'])
    .orderBy(sql`2`)
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    triggerId: r.trigger_id!,
    start: Number(r.start),
    variant: r.variant,
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
 * Conversions (rule `conversion-goals`) per (trigger, bucket, goal, variant), oldest bucket first, by
 * `converted_at`, through the primary key's trigger prefix. At most `limit`.
 */
export async function countConversionsByVariant(
  db: Db,
  scope: ResultsScope,
  window: ResultsWindow,
  bucketMs: number,
  limit: number,
): Promise<ConversionCount[]> {
  let query = db.selectFrom('conversions');
  query =
    scope.triggerId !== undefined
      ? query.where('trigger_id', '=', scope.triggerId)
      : query.where('trigger_id', 'in', campaignTriggerIds(db, scope));
  if (window.from !== undefined) query = query.where('converted_at', '>=', window.from);
  if (window.to !== undefined) query = query.where('converted_at', '<', window.to);
  const rows = await query
    .select([
      'trigger_id',
      epochBucketStart(db, 'converted_at', bucketMs).as('start'),
      'goal_index',
      'variant',
      sql<number>`count(*)`.as('n'),
      sql<number | null>`sum(revenue)`.as('revenue'),
    ])
    .groupBy(['trigger_id', sql`2`, 'goal_index', 'variant'])
    .orderBy(sql`2`)
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    triggerId: r.trigger_id,
    start: Number(r.start),
    goalIndex: Number(r.goal_index),
    variant: r.variant,
    count: Number(r.n),
    revenue: Number(r.revenue ?? 0),
  }));
}
