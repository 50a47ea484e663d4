import type { Db } from '../../db/database.js';
import { sqlDialect } from '../../db/dialect.js';
import { paddedList } from '../../db/statement-shapes.js';

export type HeldSendState = 'held' | 'fired' | 'canceled';

export interface HeldSendsTable {
  id: string;
  project_id: string;
  campaign_id: string;
  user_id: string;
  source_trigger_id: string;
  due_at: number;
  state: HeldSendState;
  reason: string | null;
  trigger_id: string | null;
  created_at: number;
  updated_at: number;
}

declare module '../../db/database.js' {
  interface Database {
    held_sends: HeldSendsTable;
  }
}

export interface HeldSend {
  id: string;
  projectId: string;
  campaignId: string;
  userId: string;
  sourceTriggerId: string;
  dueAt: number;
}

/** Stores held sends, one per (trigger, user) whatever runs the batch again (the unique constraint). */
export async function insertHeldSends(db: Db, rows: HeldSend[], now: number): Promise<void> {
  for (let i = 0; i < rows.length; i += 500)
    await db
      .insertInto('held_sends')
      .values(
        rows.slice(i, i + 500).map((h) => ({
          id: h.id,
          project_id: h.projectId,
          campaign_id: h.campaignId,
          user_id: h.userId,
          source_trigger_id: h.sourceTriggerId,
          due_at: h.dueAt,
          state: 'held' as const,
          reason: null,
          trigger_id: null,
          created_at: now,
          updated_at: now,
        })),
      )
      .onConflict((oc) => oc.columns(['source_trigger_id', 'user_id']).doNothing())
      .execute();
}

/** The users of `userIds` already held for this trigger (a batch run again holds them, never sends them). */
export async function heldUsersOf(db: Db, sourceTriggerId: string, userIds: string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (let i = 0; i < userIds.length; i += 1000) {
    const rows = await db
      .selectFrom('held_sends')
      .select('user_id')
      .where('source_trigger_id', '=', sourceTriggerId)
      .where('user_id', 'in', paddedList(userIds.slice(i, i + 1000), Infinity))
      .execute();
    for (const r of rows) out.add(r.user_id);
  }
  return out;
}

/**
 * Claims up to `limit` due held sends for the caller's transaction (PostgreSQL: `FOR UPDATE SKIP
 * LOCKED`, so instances take disjoint rows; SQLite has one writer). The caller moves each out of `held`.
 */
export async function claimDueHeldSends(db: Db, now: number, limit: number): Promise<HeldSend[]> {
  const rows = await db
    .selectFrom('held_sends')
    .select(['id', 'project_id', 'campaign_id', 'user_id', 'source_trigger_id', 'due_at'])
    .where('state', '=', 'held')
    .where('due_at', '<=', now)
    .orderBy('due_at')
    .limit(limit)
    .$call((qb) => sqlDialect(db).skipLocked(qb))
    .execute();
  return rows.map((r) => ({
    id: r.id,
    projectId: r.project_id,
    campaignId: r.campaign_id,
    userId: r.user_id,
    sourceTriggerId: r.source_trigger_id,
    dueAt: Number(r.due_at),
  }));
}

/** The instant the earliest held send is due, if any. */
export async function nextHeldDueAt(db: Db): Promise<number | undefined> {
  const row = await db
    .selectFrom('held_sends')
    .select('due_at')
    .where('state', '=', 'held')
    .orderBy('due_at')
    .limit(1)
    .executeTakeFirst();
  return row && Number(row.due_at);
}

/** Moves claimed rows to their end state (guarded by `held`, so each ends once). */
export async function finishHeldSends(
  db: Db,
  ids: string[],
  end: { state: 'fired'; triggerId: string } | { state: 'canceled'; reason: string },
  now: number,
): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('held_sends')
    .set({
      state: end.state,
      trigger_id: end.state === 'fired' ? end.triggerId : null,
      reason: end.state === 'canceled' ? end.reason : null,
      updated_at: now,
    })
    .where('id', 'in', ids)
    .where('state', '=', 'held')
    .execute();
}

/**
 * Cancels a campaign's held sends (paused, archived or back to draft): re-activating does not revive them.
 * Found through `held_sends_by_campaign` (migration 0053).
 */
export async function cancelCampaignHeldSends(
  db: Db,
  projectId: string,
  campaignId: string,
  now: number,
): Promise<void> {
  await cancelCampaignHeldSendsQuery(db, projectId, campaignId, now).execute();
}

export const cancelCampaignHeldSendsQuery = (db: Db, projectId: string, campaignId: string, now: number) =>
  db
    .updateTable('held_sends')
    .set({ state: 'canceled', reason: 'campaign_not_active', updated_at: now })
    .where('project_id', '=', projectId)
    .where('campaign_id', '=', campaignId)
    .where('state', '=', 'held');

/** A user's latest 500 held sends by due time, of one state when given, through `held_sends_user` (migration 0053). */
export const userHeldSendsQuery = (db: Db, projectId: string, userId: string, state: HeldSendState | undefined) =>
  db
    .selectFrom('held_sends')
    .select(['id', 'campaign_id', 'source_trigger_id', 'due_at', 'state', 'reason', 'trigger_id', 'created_at'])
    .where('project_id', '=', projectId)
    .where('user_id', '=', userId)
    .$if(state !== undefined, (qb) => qb.where('state', '=', state!))
    .orderBy('due_at', 'desc')
    .limit(500);
