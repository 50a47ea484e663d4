import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { preparedQuery } from '../../db/prepared.js';
import { DeliveryStatus } from '../../push/push.types.js';
import { CONTROL_SKIP_REASON } from '../experiments/experiment.js';

/** A send's conversion on one goal (migration 0043): one row per (trigger, user, goal), never rewritten. */
export interface ConversionsTable {
  trigger_id: string;
  /** Herald's internal user id (the events' and the ledger's). */
  user_id: string;
  /** The goal's position in the campaign's `conversion_goals` (0: the primary one). */
  goal_index: number;
  project_id: string;
  campaign_id: string;
  /** The send's message the conversion is credited to (the opened one when counted from the open); null for the control group. */
  message_id: string | null;
  event_id: string;
  /** The converting event's timestamp. */
  converted_at: number;
  received_at: number;
  revenue: number | null;
  /** The send's variant (rule `campaign-experiments`): its id, `control`, or null without an experiment. */
  variant: string | null;
}

declare module '../../db/database.js' {
  interface Database {
    conversions: ConversionsTable;
  }
}

/** A user's campaign message that a provider accepted, with its first open; or their record in a control group (no message). */
export interface SentMessage {
  triggerId: string;
  campaignId: string;
  messageId: string | null;
  sentAt: number;
  openedAt: number | null;
  variant: string | null;
}

/**
 * A user's accepted campaign messages sent within [since, until], through
 * `trigger_deliveries_to_user` (partial on accepted rows: the literal lets SQLite use it). Compiled
 * once (src/db/prepared.ts): it runs for every event a goal waits for.
 */
const userSentMessages = preparedQuery(
  ['projectId', 'userId', 'since', 'until'],
  (db: Db, p: { projectId: string; userId: string; since: number; until: number }) =>
    db
      .selectFrom('trigger_deliveries as td')
      .innerJoin('campaign_triggers as t', 't.id', 'td.trigger_id')
      .leftJoin('message_opens as o', 'o.message_id', 'td.message_id')
      .select(['td.trigger_id', 't.campaign_id', 'td.message_id', 'td.created_at', 'td.variant', 'o.opened_at'])
      .where('td.user_id', '=', p.userId)
      .where(sql<boolean>`td.status = ${sql.lit(DeliveryStatus.ACCEPTED)}`)
      .where('td.created_at', '>=', p.since)
      .where('td.created_at', '<=', p.until)
      .where('td.message_id', 'is not', null)
      .where('t.project_id', '=', p.projectId),
);

/** The user's records in a control group within [since, until], through `trigger_deliveries_control_to_user`. */
const userControlRecords = preparedQuery(
  ['projectId', 'userId', 'since', 'until'],
  (db: Db, p: { projectId: string; userId: string; since: number; until: number }) =>
    db
      .selectFrom('trigger_deliveries as td')
      .innerJoin('campaign_triggers as t', 't.id', 'td.trigger_id')
      .select(['td.trigger_id', 't.campaign_id', 'td.created_at', 'td.variant'])
      .where('td.user_id', '=', p.userId)
      .where(sql<boolean>`td.failure_reason = ${sql.lit(CONTROL_SKIP_REASON)}`)
      .where('td.created_at', '>=', p.since)
      .where('td.created_at', '<=', p.until)
      .where('t.project_id', '=', p.projectId),
);

/**
 * The user's accepted messages of these campaigns sent within [since, until], and their records in
 * those campaigns' control groups (a user's few sends, filtered here).
 */
export async function sentMessages(
  db: Db,
  projectId: string,
  userId: string,
  campaignIds: ReadonlySet<string>,
  since: number,
  until: number,
): Promise<SentMessage[]> {
  const p = { projectId, userId, since, until };
  const [sent, control] = [await userSentMessages(db, p), await userControlRecords(db, p)];
  const out: SentMessage[] = [];
  for (const r of sent)
    if (campaignIds.has(r.campaign_id))
      out.push({
        triggerId: r.trigger_id,
        campaignId: r.campaign_id,
        messageId: r.message_id,
        sentAt: Number(r.created_at),
        openedAt: r.opened_at === null ? null : Number(r.opened_at),
        variant: r.variant,
      });
  for (const r of control)
    if (campaignIds.has(r.campaign_id))
      out.push({
        triggerId: r.trigger_id,
        campaignId: r.campaign_id,
        messageId: null,
        sentAt: Number(r.created_at),
        openedAt: null,
        variant: r.variant,
      });
  return out;
}

/** Stores the conversion unless the send converted on that goal already; `true` when stored. */
export async function recordConversion(db: Db, row: ConversionsTable): Promise<boolean> {
  const inserted = await db
    .insertInto('conversions')
    .values(row)
    .onConflict((oc) => oc.columns(['trigger_id', 'user_id', 'goal_index']).doNothing())
    .returning('goal_index')
    .executeTakeFirst();
  return inserted !== undefined;
}

export interface GoalCount {
  goalIndex: number;
  converted: number;
  revenue: number;
}

/** Conversions per goal of one trigger (the primary key's prefix), or of a campaign by `converted_at` in [since, until). */
export async function countConversions(
  db: Db,
  scope: { triggerId: string } | { projectId: string; campaignId: string },
  window: { since?: number | undefined; until?: number | undefined } = {},
): Promise<GoalCount[]> {
  let query = db.selectFrom('conversions');
  query =
    'triggerId' in scope
      ? query.where('trigger_id', '=', scope.triggerId)
      : query.where('project_id', '=', scope.projectId).where('campaign_id', '=', scope.campaignId);
  if (window.since !== undefined) query = query.where('converted_at', '>=', window.since);
  if (window.until !== undefined) query = query.where('converted_at', '<', window.until);
  const rows = await query
    .select(['goal_index', sql<number>`count(*)`.as('n'), sql<number | null>`sum(revenue)`.as('revenue')])
    .groupBy('goal_index')
    .orderBy('goal_index')
    .execute();
  return rows.map((r) => ({
    goalIndex: Number(r.goal_index),
    converted: Number(r.n),
    revenue: Number(r.revenue ?? 0),
  }));
}

/** Per goal, as the trigger status and analytics answer it (rule `conversion-goals`). */
export interface GoalConversions {
  goal_index: number;
  /** The goal's event; null for a goal since removed from the campaign. */
  event: string | null;
  converted: number;
  revenue: number;
}

/** One entry per current goal (zeros included), then any counted goal index the campaign no longer has. */
export function goalConversions(goalEvents: string[], counts: GoalCount[]): GoalConversions[] {
  const out: GoalConversions[] = goalEvents.map((event, i) => ({ goal_index: i, event, converted: 0, revenue: 0 }));
  for (const c of counts) {
    const known = out[c.goalIndex];
    if (known) Object.assign(known, { converted: c.converted, revenue: c.revenue });
    else out.push({ goal_index: c.goalIndex, event: null, converted: c.converted, revenue: c.revenue });
  }
  return out.sort((a, b) => a.goal_index - b.goal_index);
}

/** Up to `limit` of a deleted campaign's conversions (found through `conversions_by_campaign`); answers how many. */
export async function deleteCampaignConversionsChunk(
  db: Db,
  projectId: string,
  campaignId: string,
  limit: number,
): Promise<number> {
  const result = await db
    .deleteFrom('conversions')
    .where((eb) =>
      eb(
        eb.refTuple('trigger_id', 'user_id', 'goal_index'),
        'in',
        eb
          .selectFrom('conversions')
          .select(['trigger_id', 'user_id', 'goal_index'])
          .where('project_id', '=', projectId)
          .where('campaign_id', '=', campaignId)
          .limit(limit)
          .$asTuple('trigger_id', 'user_id', 'goal_index'),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
