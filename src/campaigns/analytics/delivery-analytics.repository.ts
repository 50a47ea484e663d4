import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { epochBucketStart, sqlDialect } from '../../db/dialect.js';
import { readJson } from '../../db/json.js';

/**
 * The per-minute rollup of the trigger ledger (migration 0015), kept by the database as ledger
 * rows are inserted. On SQLite one row per group; on PostgreSQL partial rows to be summed.
 */
export interface TriggerDeliveryCountsTable {
  trigger_id: string;
  /** Start of the UTC minute of the outcomes (epoch ms). */
  minute: number;
  status: string;
  /** `''`: none recorded (rows older than the provider column). */
  provider: string;
  /** `''`: no failure reason. */
  reason: string;
  /** Rule `campaign-experiments` (migration 0044): the variant id, `control`, or `''` outside an experiment. */
  variant: string;
  n: number;
}

declare module '../../db/database.js' {
  interface Database {
    trigger_delivery_counts: TriggerDeliveryCountsTable;
  }
}

/** Whose outcomes to count: one trigger, or every trigger of a campaign. */
export type AnalyticsScope = { triggerId: string } | { projectId: string; campaignId: string };

export interface AnalyticsWindow {
  /** Inclusive, epoch ms (minute precision: the minute holding it counts whole). */
  since?: number | undefined;
  /** Exclusive, epoch ms (minute precision). */
  until?: number | undefined;
}

/** Outcomes of one (time bucket, state, provider, failure reason). */
export interface OutcomeGroup {
  /** Bucket start, epoch ms. */
  start: number;
  status: string;
  provider: string | null;
  reason: string | null;
  /** The variant id or `control`; null outside an experiment. */
  variant: string | null;
  count: number;
}

const MINUTE = 60_000;

/**
 * Outcome counts per (time bucket, state, provider, failure reason), oldest bucket first, from the
 * rollup: both the totals and the series fold from it (the caller folds them). At most `limit` groups.
 */
export async function countOutcomes(
  db: Db,
  scope: AnalyticsScope,
  window: AnalyticsWindow,
  bucketMs: number,
  limit: number,
): Promise<OutcomeGroup[]> {
  let query = db.selectFrom('trigger_delivery_counts');
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
  if (window.since !== undefined) query = query.where('minute', '>=', Math.floor(window.since / MINUTE) * MINUTE);
  if (window.until !== undefined) query = query.where('minute', '<', window.until);
  const rows = await query
    .select([
      epochBucketStart(db, 'minute', bucketMs).as('start'),
      'status',
      'provider',
      'reason',
      'variant',
      sql<number>`sum(n)`.as('n'),
    ])
    .groupBy([sql`1`, 'status', 'provider', 'reason', 'variant'])
    .orderBy(sql`1`)
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    start: Number(r.start),
    status: r.status,
    provider: r.provider === '' ? null : r.provider,
    reason: r.reason === '' ? null : r.reason,
    variant: r.variant === '' ? null : r.variant,
    count: Number(r.n),
  }));
}

/** First key of the advisory locks that keep two sessions from folding one trigger's rollup at once. */
const FOLD_LOCK_CLASS = 17_015;

/**
 * Folds a trigger's partial rollup rows into one row per group. Only PostgreSQL keeps partials
 * (one per group per ledger statement: a 1M-delivery trigger leaves over 100,000, which reads
 * would sum); SQLite's rollup is folded as it is written, so this does nothing there. The fan-out
 * calls it after each batch closes. Delete and re-insert are one statement, so a read sees the
 * trigger's counts whole; a session that finds another folding the same trigger skips (the next
 * batch folds), so foldings never wait on or deadlock with each other, and ledger inserts running
 * meanwhile append rows this statement does not see and so keeps.
 */
export async function foldDeliveryCounts(db: Db, triggerId: string): Promise<void> {
  if (!sqlDialect(db).supportsStatementTriggers) return;
  await db.transaction().execute(async (trx) => {
    const lock = await sql<{
      locked: boolean;
    }>`select pg_try_advisory_xact_lock(${FOLD_LOCK_CLASS}, hashtext(${triggerId})) as locked`.execute(trx);
    if (!lock.rows[0]?.locked) return;
    // Only groups with partials are rewritten, so a fold's churn (dead rows until vacuum) is what
    // was appended since the last one, not the whole trigger's rollup.
    await sql`with partial as (
        select minute, status, provider, reason, variant from trigger_delivery_counts where trigger_id = ${triggerId}
        group by minute, status, provider, reason, variant having count(*) > 1),
      gone as (
        delete from trigger_delivery_counts c using partial p
        where c.trigger_id = ${triggerId} and c.minute = p.minute and c.status = p.status
          and c.provider = p.provider and c.reason = p.reason and c.variant = p.variant
        returning c.trigger_id, c.minute, c.status, c.provider, c.reason, c.variant, c.n)
      insert into trigger_delivery_counts (trigger_id, minute, status, provider, reason, variant, n)
      select trigger_id, minute, status, provider, reason, variant, sum(n) from gone group by 1, 2, 3, 4, 5, 6`.execute(
      trx,
    );
  });
}

/** Skip reasons a trigger counts per audience member (a user, or a target), not per device: no ledger row holds them. */
export const AUDIENCE_SKIPS = ['not_found', 'not_in_segment', 'audience_conditions', 'unsubscribed', 'no_device'];

/**
 * Audience members a scope's closed batches did not send to, by reason (upper-cased, as the ledger's
 * reasons are), plus `HELD` (held by quiet hours for a later trigger): read from the batches'
 * counters, those closed inside the window. One row per batch (about a thousand users each).
 */
export async function countAudienceSkips(
  db: Db,
  scope: AnalyticsScope,
  window: AnalyticsWindow,
): Promise<Record<string, number>> {
  let query = db
    .selectFrom('trigger_batches')
    .innerJoin('campaign_triggers', 'campaign_triggers.id', 'trigger_batches.trigger_id')
    .select('trigger_batches.counters')
    .where('trigger_batches.state', '!=', 'queued');
  query =
    'triggerId' in scope
      ? query.where('trigger_batches.trigger_id', '=', scope.triggerId)
      : query
          .where('campaign_triggers.project_id', '=', scope.projectId)
          .where('campaign_triggers.campaign_id', '=', scope.campaignId);
  if (window.since !== undefined) query = query.where('trigger_batches.updated_at', '>=', window.since);
  if (window.until !== undefined) query = query.where('trigger_batches.updated_at', '<', window.until);
  const out: Record<string, number> = {};
  const add = (key: string, n: unknown) => {
    if (typeof n === 'number' && n > 0) out[key] = (out[key] ?? 0) + n;
  };
  for (const row of await query.execute()) {
    if (row.counters === null) continue;
    const c = readJson<{ skipped?: Record<string, unknown>; held?: unknown }>(row.counters);
    for (const reason of AUDIENCE_SKIPS) add(reason.toUpperCase(), c.skipped?.[reason]);
    add('HELD', c.held);
  }
  return out;
}
