import { sql } from 'kysely';
import type { Db, JsonColumn } from '../../db/database.js';
import { sqlDialect } from '../../db/dialect.js';
import { preparedInsert } from '../../db/prepared.js';
import { readJson } from '../../db/json.js';
import { DeliveryStatus } from '../../push/push.types.js';

export type PendingSendState = 'pending' | 'fired' | 'canceled';
/** Why a pending send was canceled (rule `event-triggered-campaigns`). */
export type CancelReason = 'cancel_event' | 'campaign_not_active' | 'campaign_changed';

export interface EventPendingSendsTable {
  id: string;
  project_id: string;
  campaign_id: string;
  user_id: string;
  event_id: string;
  event_name: string;
  event_properties: JsonColumn;
  event_timestamp: number;
  due_at: number;
  state: PendingSendState;
  reason: string | null;
  trigger_id: string | null;
  created_at: number;
  updated_at: number;
}

declare module '../../db/database.js' {
  interface Database {
    event_pending_sends: EventPendingSendsTable;
  }
}

export interface PendingSend {
  id: string;
  projectId: string;
  campaignId: string;
  userId: string;
  eventId: string;
  eventName: string;
  eventProperties: Record<string, unknown>;
  eventTimestamp: number;
  dueAt: number;
  state: PendingSendState;
  reason: string | null;
  triggerId: string | null;
  createdAt: number;
  updatedAt: number;
}

export function rowToPendingSend(r: EventPendingSendsTable): PendingSend {
  return {
    id: r.id,
    projectId: r.project_id,
    campaignId: r.campaign_id,
    userId: r.user_id,
    eventId: r.event_id,
    eventName: r.event_name,
    eventProperties: readJson<Record<string, unknown>>(r.event_properties),
    eventTimestamp: Number(r.event_timestamp),
    dueAt: Number(r.due_at),
    state: r.state,
    reason: r.reason,
    triggerId: r.trigger_id,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

export type NewPendingSend = Omit<PendingSend, 'state' | 'reason' | 'triggerId' | 'updatedAt' | 'eventProperties'> & {
  /** The event's properties as the events row stores them (serialized once for both). */
  eventPropertiesJson: string;
};

/** Rows per INSERT statement (14 parameters a row): a 500-event batch takes a handful of statements. */
const SENDS_PER_STATEMENT = 64;

// Compiled once per dialect and row count (src/db/prepared.ts): this runs in every matching event's transaction.
const insertPendingSendRows = preparedInsert<EventPendingSendsTable>(
  [
    'id',
    'project_id',
    'campaign_id',
    'user_id',
    'event_id',
    'event_name',
    'event_properties',
    'event_timestamp',
    'due_at',
    'state',
    'reason',
    'trigger_id',
    'created_at',
    'updated_at',
  ],
  (db: Db, rows) =>
    db
      .insertInto('event_pending_sends')
      .values(rows)
      .onConflict((oc) => oc.columns(['project_id', 'campaign_id', 'event_id']).doNothing()),
  SENDS_PER_STATEMENT,
);

/** Inserts pending sends; one per (campaign, event) whatever runs it again (the unique constraint). */
export async function insertPendingSends(db: Db, rows: NewPendingSend[]): Promise<void> {
  if (rows.length === 0) return;
  await insertPendingSendRows(
    db,
    rows.map((p) => ({
      id: p.id,
      project_id: p.projectId,
      campaign_id: p.campaignId,
      user_id: p.userId,
      event_id: p.eventId,
      event_name: p.eventName,
      event_properties: p.eventPropertiesJson,
      event_timestamp: p.eventTimestamp,
      due_at: p.dueAt,
      state: 'pending',
      reason: null,
      trigger_id: null,
      created_at: p.createdAt,
      updated_at: p.createdAt,
    })),
  );
}

/** Cancels a user's pending sends of these campaigns (a `cancel_on` event); only sends created before `before`. */
export async function cancelUserPendingSends(
  db: Db,
  userId: string,
  campaignIds: string[],
  before: number,
  now: number,
): Promise<void> {
  await db
    .updateTable('event_pending_sends')
    .set({ state: 'canceled', reason: 'cancel_event' satisfies CancelReason, updated_at: now })
    .where('user_id', '=', userId)
    .where('state', '=', 'pending')
    .where('campaign_id', 'in', campaignIds)
    .where('created_at', '<=', before)
    .execute();
}

/** Cancels every pending send of a campaign (paused, archived, back to draft, or its event trigger removed). */
export async function cancelCampaignPendingSends(
  db: Db,
  projectId: string,
  campaignId: string,
  reason: CancelReason,
  now: number,
): Promise<number> {
  const result = await db
    .updateTable('event_pending_sends')
    .set({ state: 'canceled', reason, updated_at: now })
    .where('project_id', '=', projectId)
    .where('campaign_id', '=', campaignId)
    .where('state', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * Claims up to `limit` due pending sends for the caller's transaction. PostgreSQL: `FOR UPDATE SKIP
 * LOCKED`, so instances claiming at once take disjoint rows and none waits; SQLite has one writer.
 * The caller moves every claimed row out of `pending` before its transaction commits.
 */
export async function claimDuePendingSends(db: Db, now: number, limit: number): Promise<PendingSend[]> {
  const rows = await db
    .selectFrom('event_pending_sends')
    .selectAll()
    .where('state', '=', 'pending')
    .where('due_at', '<=', now)
    .orderBy('due_at')
    .limit(limit)
    .$call((qb) => sqlDialect(db).skipLocked(qb))
    .execute();
  return rows.map(rowToPendingSend);
}

/** The instant the earliest pending send is due, if any. */
export async function nextDueAt(db: Db): Promise<number | undefined> {
  const row = await db
    .selectFrom('event_pending_sends')
    .select('due_at')
    .where('state', '=', 'pending')
    .orderBy('due_at')
    .limit(1)
    .executeTakeFirst();
  return row && Number(row.due_at);
}

/** Marks claimed rows fired into one trigger (guarded by `pending`, so each fires once); answers the ids it moved. */
export async function fireClaimedSends(db: Db, ids: string[], triggerId: string, now: number): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .updateTable('event_pending_sends')
    .set({ state: 'fired', trigger_id: triggerId, reason: null, updated_at: now })
    .where('id', 'in', ids)
    .where('state', '=', 'pending')
    .returning('id')
    .execute();
  return new Set(rows.map((r) => r.id));
}

/** Cancels claimed rows whose campaign no longer sends them (guarded by `pending`, so each ends once). */
export async function cancelClaimedSends(db: Db, ids: string[], reason: CancelReason, now: number): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('event_pending_sends')
    .set({ state: 'canceled', reason, trigger_id: null, updated_at: now })
    .where('id', 'in', ids)
    .where('state', '=', 'pending')
    .execute();
}

export interface PendingSendFilter {
  projectId: string;
  campaignId?: string;
  userId?: string;
  state?: PendingSendState;
  limit: number;
  after?: { eventId: string; id: string } | undefined;
}

/**
 * Newest first by event (time-ordered ids: the unique index on (project, campaign, event) serves a
 * campaign's list), with each user's `project_user_id`. The send's id orders one event's sends.
 */
export async function listPendingSends(
  db: Db,
  f: PendingSendFilter,
): Promise<Array<PendingSend & { projectUserId: string }>> {
  let query = db
    .selectFrom('event_pending_sends as p')
    .innerJoin('users as u', 'u.id', 'p.user_id')
    .selectAll('p')
    .select('u.project_user_id')
    .where('p.project_id', '=', f.projectId);
  if (f.campaignId !== undefined) query = query.where('p.campaign_id', '=', f.campaignId);
  if (f.userId !== undefined) query = query.where('p.user_id', '=', f.userId);
  if (f.state !== undefined) query = query.where('p.state', '=', f.state);
  const after = f.after;
  if (after)
    query = query.where((eb) =>
      eb.or([
        eb('p.event_id', '<', after.eventId),
        eb.and([eb('p.event_id', '=', after.eventId), eb('p.id', '<', after.id)]),
      ]),
    );
  const rows = await query.orderBy('p.event_id', 'desc').orderBy('p.id', 'desc').limit(f.limit).execute();
  return rows.map((r) => ({ ...rowToPendingSend(r), projectUserId: r.project_user_id }));
}

/** Pending sends of a campaign by state, and the sends accepted for the fired ones (from their triggers' ledger). */
export async function countPendingSends(
  db: Db,
  projectId: string,
  campaignId: string,
): Promise<{ pending: number; fired: number; canceled: number; sent: number }> {
  const rows = await db
    .selectFrom('event_pending_sends')
    .select(['state', sql<number>`count(*)`.as('n')])
    .where('project_id', '=', projectId)
    .where('campaign_id', '=', campaignId)
    .groupBy('state')
    .execute();
  const by = new Map(rows.map((r) => [r.state, Number(r.n)]));
  const sent = await db
    .selectFrom('event_pending_sends as p')
    // A trigger fires several users' sends: each pending send counts its own user's deliveries.
    .innerJoin('trigger_deliveries as d', (join) =>
      join.onRef('d.trigger_id', '=', 'p.trigger_id').onRef('d.user_id', '=', 'p.user_id'),
    )
    .select(sql<number>`count(*)`.as('n'))
    .where('p.project_id', '=', projectId)
    .where('p.campaign_id', '=', campaignId)
    .where('p.state', '=', 'fired')
    .where('d.status', '=', DeliveryStatus.ACCEPTED)
    .executeTakeFirst();
  return {
    pending: by.get('pending') ?? 0,
    fired: by.get('fired') ?? 0,
    canceled: by.get('canceled') ?? 0,
    sent: Number(sent?.n ?? 0),
  };
}
