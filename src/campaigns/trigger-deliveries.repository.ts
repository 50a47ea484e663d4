import { sql } from 'kysely';
import type { Db } from '../db/database.js';

/** The send-side checkpoint of a trigger (C4): one row per (trigger, device), never two. */
export interface TriggerDeliveriesTable {
  trigger_id: string;
  device_id: string;
  batch_no: number;
  user_id: string;
  /** R12 status; `DELIVERY_RESULT_STATUS_SKIPPED` for a recipient whose message did not render. */
  status: string;
  message_id: string | null;
  /** The provider's raw code, or Herald's skip reason (`TEMPLATE_RENDER_ERROR`, ...). */
  failure_reason: string | null;
  token_action: string | null;
  /** Human detail of a skip (the Liquid error). */
  detail: string | null;
  created_at: number;
}

declare module '../db/database.js' {
  interface Database {
    trigger_deliveries: TriggerDeliveriesTable;
  }
}

const INSERT_CHUNK = 500;

/** Records outcomes; a device already recorded for the trigger keeps its first record. */
export async function recordDeliveries(db: Db, rows: TriggerDeliveriesTable[]): Promise<void> {
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
    await db
      .insertInto('trigger_deliveries')
      .values(rows.slice(i, i + INSERT_CHUNK))
      .onConflict((oc) => oc.columns(['trigger_id', 'device_id']).doNothing())
      .execute();
  }
}

/** Which of `deviceIds` already have an outcome for the trigger (a resumed batch skips them). */
export async function recordedDevices(db: Db, triggerId: string, batchNo: number): Promise<Set<string>> {
  const rows = await db.selectFrom('trigger_deliveries').select('device_id').where('trigger_id', '=', triggerId).where('batch_no', '=', batchNo).execute();
  return new Set(rows.map((r) => r.device_id));
}

export interface DeliveryCount {
  status: string;
  reason: string | null;
  pruned: boolean;
  count: number;
}

/**
 * Outcome counts of some batches of a trigger (all when `batchNos` is undefined). Skip reasons are
 * kept apart; provider codes are not (they are many, and `status` already classifies them).
 */
export async function countDeliveries(db: Db, triggerId: string, batchNos?: number[]): Promise<DeliveryCount[]> {
  if (batchNos !== undefined && batchNos.length === 0) return [];
  let query = db
    .selectFrom('trigger_deliveries')
    .select([
      'status',
      sql<string | null>`case when status = 'DELIVERY_RESULT_STATUS_SKIPPED' then failure_reason end`.as('reason'),
      sql<number>`case when token_action is null then 0 else 1 end`.as('pruned'),
      sql<number>`count(*)`.as('count'),
    ])
    .where('trigger_id', '=', triggerId);
  if (batchNos !== undefined) query = query.where('batch_no', 'in', batchNos);
  const rows = await query.groupBy(['status', sql`2`, sql`3`]).execute();
  return rows.map((r) => ({ status: r.status, reason: r.reason, pruned: Number(r.pruned) === 1, count: Number(r.count) }));
}
