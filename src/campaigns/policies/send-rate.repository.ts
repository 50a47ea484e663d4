import { sql } from 'kysely';
import type { Db } from '../../db/database.js';

export interface CampaignSendRatesTable {
  project_id: string;
  campaign_id: string;
  /** The GCRA's theoretical arrival time, epoch microseconds. */
  tat_us: number;
}

declare module '../../db/database.js' {
  interface Database {
    campaign_send_rates: CampaignSendRatesTable;
  }
}

/** The campaign's pacing instant (epoch µs), creating its row at `initial` the first time. */
export async function readTat(db: Db, projectId: string, campaignId: string, initial: number): Promise<number> {
  const row = await db
    .selectFrom('campaign_send_rates')
    .select('tat_us')
    .where('project_id', '=', projectId)
    .where('campaign_id', '=', campaignId)
    .executeTakeFirst();
  if (row) return Number(row.tat_us);
  await db
    .insertInto('campaign_send_rates')
    .values({ project_id: projectId, campaign_id: campaignId, tat_us: initial })
    .onConflict((oc) => oc.columns(['project_id', 'campaign_id']).doNothing())
    .execute();
  return readTat(db, projectId, campaignId, initial);
}

/** Moves the pacing instant from `from` to `to` only if no one moved it since (compare-and-set); whether it did. */
export async function advanceTat(
  db: Db,
  projectId: string,
  campaignId: string,
  from: number,
  to: number,
): Promise<boolean> {
  const result = await db
    .updateTable('campaign_send_rates')
    .set({ tat_us: to })
    .where('project_id', '=', projectId)
    .where('campaign_id', '=', campaignId)
    .where('tat_us', '=', from)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Moves the pacing instant from `max(tat, nowUs)` on by `step` if it is at most `upTo` (the bucket
 * has room for the claim), in one statement (atomic on both databases: PostgreSQL rechecks the
 * condition on the row's latest version); whether it did. False too when the row does not exist yet.
 */
export async function claimWhole(
  db: Db,
  projectId: string,
  campaignId: string,
  claim: { nowUs: number; upTo: number; step: number },
): Promise<boolean> {
  const result = await db
    .updateTable('campaign_send_rates')
    .set({
      tat_us: sql<number>`(case when tat_us > ${claim.nowUs} then tat_us else ${claim.nowUs} end) + ${claim.step}`,
    })
    .where('project_id', '=', projectId)
    .where('campaign_id', '=', campaignId)
    .where('tat_us', '<=', claim.upTo)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** The campaign's pacing instant (epoch µs), if it was ever paced. */
export async function findTat(db: Db, projectId: string, campaignId: string): Promise<number | undefined> {
  const row = await db
    .selectFrom('campaign_send_rates')
    .select('tat_us')
    .where('project_id', '=', projectId)
    .where('campaign_id', '=', campaignId)
    .executeTakeFirst();
  return row && Number(row.tat_us);
}

/** Outcomes recorded for a trigger so far (over all its batches, open ones included). */
export async function recordedCount(db: Db, triggerId: string): Promise<number> {
  const row = await db
    .selectFrom('trigger_deliveries')
    .select(sql<number>`count(*)`.as('n'))
    .where('trigger_id', '=', triggerId)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** Counted ranges per status read; further open batches are estimated. */
const COUNTED_BATCHES = 20;

/**
 * A broadcast's users still ahead: those in the ranges of its open batches (the first
 * `COUNTED_BATCHES` counted, each about a thousand users; the rest `perBatch` each).
 */
export async function openBatchUsers(
  db: Db,
  trigger: { id: string; projectId: string; snapshotAt: number },
  perBatch: number,
): Promise<number> {
  const open = await db
    .selectFrom('trigger_batches')
    .select(['after_user_id', 'upto_user_id'])
    .where('trigger_id', '=', trigger.id)
    .where('state', '=', 'queued')
    .orderBy('batch_no')
    .execute();
  let users = Math.max(0, open.length - COUNTED_BATCHES) * perBatch;
  for (const b of open.slice(0, COUNTED_BATCHES)) {
    let q = db
      .selectFrom('users')
      .select(sql<number>`count(*)`.as('n'))
      .where('project_id', '=', trigger.projectId)
      .where('created_at', '<=', trigger.snapshotAt);
    if (b.after_user_id !== null) q = q.where('id', '>', b.after_user_id);
    if (b.upto_user_id !== null) q = q.where('id', '<=', b.upto_user_id);
    users += Number((await q.executeTakeFirst())?.n ?? 0);
  }
  return users;
}
