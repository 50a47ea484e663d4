import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import { epochBucketStart } from '../db/dialect.js';
import { DeliveryStatus } from '../push/push.types.js';

/** Whose ledger rows to count: one trigger, or every trigger of a campaign. */
export type AnalyticsScope = { triggerId: string } | { projectId: string; campaignId: string };

export interface AnalyticsWindow {
  /** Inclusive, epoch ms. */
  since?: number | undefined;
  /** Exclusive, epoch ms. */
  until?: number | undefined;
}

export interface OutcomeGroup {
  status: string;
  provider: string | null;
  reason: string | null;
  count: number;
}

export interface BucketRow {
  start: number;
  sent: number;
  failed: number;
}

// Every query reads the covering index `trigger_deliveries_analytics` (migration 0015) only.
function scoped(db: Db, scope: AnalyticsScope, window: AnalyticsWindow) {
  let query = db.selectFrom('trigger_deliveries');
  query =
    'triggerId' in scope
      ? query.where('trigger_id', '=', scope.triggerId)
      : query.where('trigger_id', 'in', (sub) =>
          sub
            .selectFrom('campaign_triggers')
            .select('id')
            .where('project_id', '=', scope.projectId)
            .where('campaign_id', '=', scope.campaignId),
        );
  if (window.since !== undefined) query = query.where('created_at', '>=', window.since);
  if (window.until !== undefined) query = query.where('created_at', '<', window.until);
  return query;
}

/** Outcome counts by (state, provider, failure reason): few groups, folded into the totals by the caller. */
export async function countOutcomes(db: Db, scope: AnalyticsScope, window: AnalyticsWindow): Promise<OutcomeGroup[]> {
  const rows = await scoped(db, scope, window)
    .select(['status', 'provider', 'failure_reason', sql<number>`count(*)`.as('n')])
    .groupBy(['status', 'provider', 'failure_reason'])
    .execute();
  return rows.map((r) => ({ status: r.status, provider: r.provider, reason: r.failure_reason, count: Number(r.n) }));
}

/**
 * Sends (accepted) and failures (every other outcome, render skips included) per time bucket,
 * oldest first; only buckets holding an outcome. At most `limit` rows.
 */
export async function countByBucket(
  db: Db,
  scope: AnalyticsScope,
  window: AnalyticsWindow,
  bucketMs: number,
  limit: number,
): Promise<BucketRow[]> {
  const start = epochBucketStart(db, 'created_at', bucketMs);
  const rows = await scoped(db, scope, window)
    .select([
      start.as('start'),
      sql<number>`sum(case when status = ${DeliveryStatus.ACCEPTED} then 1 else 0 end)`.as('sent'),
      sql<number>`sum(case when status = ${DeliveryStatus.ACCEPTED} then 0 else 1 end)`.as('failed'),
    ])
    .groupBy(sql`1`)
    .orderBy(sql`1`)
    .limit(limit)
    .execute();
  return rows.map((r) => ({ start: Number(r.start), sent: Number(r.sent), failed: Number(r.failed) }));
}
