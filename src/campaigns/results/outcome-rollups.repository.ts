import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { sqlDialect } from '../../db/dialect.js';

/**
 * The per-minute rollups of opens and conversions (migration 0051), kept by the database as opens and
 * conversions are inserted. On SQLite one row per group; on PostgreSQL partial rows to be summed.
 */
export interface TriggerOpenCountsTable {
  trigger_id: string;
  /** Start of the UTC minute of `opened_at` (epoch ms). */
  minute: number;
  /** The open's variant (migration 0050), `''` outside an experiment. */
  variant: string;
  n: number;
}

export interface TriggerConversionCountsTable {
  trigger_id: string;
  /** Start of the UTC minute of `converted_at` (epoch ms). */
  minute: number;
  goal_index: number;
  /** The send's variant, `''` outside an experiment. */
  variant: string;
  n: number;
  /** Sum of the conversions' revenue (none counts 0). */
  revenue: number;
}

declare module '../../db/database.js' {
  interface Database {
    trigger_open_counts: TriggerOpenCountsTable;
    trigger_conversion_counts: TriggerConversionCountsTable;
  }
}

/** Key of the advisory lock that keeps two sessions from folding these rollups at once. */
const FOLD_LOCK_CLASS = 17_051;

/**
 * Folds partial rows of the open and conversion rollups into one row per group: one trigger's, or
 * every trigger's. Only PostgreSQL keeps partials (one per group per insert statement, and an open
 * or a conversion is inserted alone, so up to one per open); SQLite's rollups are folded as they are
 * written, so this does nothing there. The fan-out calls it for its trigger after each batch and the
 * retention pass for all (results read a replica, which cannot write). Delete and re-insert are one
 * statement per table, so a read sees the counts whole; a session that finds another folding skips,
 * so folds never wait on or deadlock with each other; inserts meanwhile append rows this fold keeps.
 */
export async function foldOutcomeCounts(db: Db, triggerId?: string): Promise<void> {
  if (!sqlDialect(db).supportsStatementTriggers) return;
  await db.transaction().execute(async (trx) => {
    const lock = await sql<{
      locked: boolean;
    }>`select pg_try_advisory_xact_lock(${FOLD_LOCK_CLASS}, 0) as locked`.execute(trx);
    if (!lock.rows[0]?.locked) return;
    const scope = triggerId === undefined ? sql`true` : sql`trigger_id = ${triggerId}`;
    // Only groups with partials are rewritten, so a fold's churn is what was appended since the last one.
    await sql`with partial as (
        select trigger_id, minute, variant from trigger_open_counts where ${scope}
        group by trigger_id, minute, variant having count(*) > 1),
      gone as (
        delete from trigger_open_counts c using partial p
        where c.trigger_id = p.trigger_id and c.minute = p.minute and c.variant = p.variant
        returning c.trigger_id, c.minute, c.variant, c.n)
      insert into trigger_open_counts (trigger_id, minute, variant, n)
      select trigger_id, minute, variant, sum(n) from gone group by 1, 2, 3`.execute(trx);
    await sql`with partial as (
        select trigger_id, minute, goal_index, variant from trigger_conversion_counts where ${scope}
        group by trigger_id, minute, goal_index, variant having count(*) > 1),
      gone as (
        delete from trigger_conversion_counts c using partial p
        where c.trigger_id = p.trigger_id and c.minute = p.minute and c.goal_index = p.goal_index
          and c.variant = p.variant
        returning c.trigger_id, c.minute, c.goal_index, c.variant, c.n, c.revenue)
      insert into trigger_conversion_counts (trigger_id, minute, goal_index, variant, n, revenue)
      select trigger_id, minute, goal_index, variant, sum(n), sum(revenue) from gone group by 1, 2, 3, 4`.execute(trx);
  });
}
