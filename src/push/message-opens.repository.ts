import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import { epochBucketStart } from '../db/dialect.js';

/** The first open of a message (migration 0041): one row per message, never rewritten. */
export interface MessageOpensTable {
  message_id: string;
  project_id: string;
  /** The recipient user; null when the message's device and ledger row are gone. */
  project_user_id: string | null;
  campaign_id: string | null;
  trigger_id: string | null;
  /** The ledger row's experiment variant (migration 0050); null outside an experiment. */
  variant: string | null;
  /** The action id the user tapped; null for a tap on the notification itself. */
  action: string | null;
  opened_at: number;
  received_at: number;
}

declare module '../db/database.js' {
  interface Database {
    message_opens: MessageOpensTable;
  }
}

/** Stores the open unless the message has one; answers the stored row (the first open) either way. */
export async function recordOpen(db: Db, row: MessageOpensTable): Promise<{ open: MessageOpensTable; fresh: boolean }> {
  const inserted = await db
    .insertInto('message_opens')
    .values(row)
    .onConflict((oc) => oc.column('message_id').doNothing())
    .returning('message_id')
    .executeTakeFirst();
  if (inserted) return { open: row, fresh: true };
  return { open: (await findOpen(db, row.project_id, row.message_id))!, fresh: false };
}

export function findOpen(db: Db, projectId: string, messageId: string): Promise<MessageOpensTable | undefined> {
  return db
    .selectFrom('message_opens')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('message_id', '=', messageId)
    .executeTakeFirst();
}

/** When each of these messages was first opened (those opened), by message id. */
export async function openTimes(db: Db, projectId: string, messageIds: string[]): Promise<Map<string, number>> {
  if (messageIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('message_opens')
    .select(['message_id', 'opened_at'])
    .where('project_id', '=', projectId)
    .where('message_id', 'in', messageIds)
    .execute();
  return new Map(rows.map((r) => [r.message_id, Number(r.opened_at)]));
}

/** Whose opens to count: one trigger, or a campaign's (every trigger). */
export type OpenScope = { triggerId: string } | { projectId: string; campaignId: string };

/**
 * Opens per time bucket (start, epoch ms), oldest first, within [since, until), through the
 * partial index of the scope (`message_opens_by_trigger` or `_by_campaign`). At most `limit` buckets.
 */
export async function countOpens(
  db: Db,
  scope: OpenScope,
  window: { since?: number | undefined; until?: number | undefined },
  bucketMs: number,
  limit: number,
): Promise<Array<{ start: number; count: number }>> {
  let query = db.selectFrom('message_opens');
  query =
    'triggerId' in scope
      ? query.where('trigger_id', '=', scope.triggerId).where('trigger_id', 'is not', null)
      : query
          .where('project_id', '=', scope.projectId)
          .where('campaign_id', '=', scope.campaignId)
          .where('campaign_id', 'is not', null);
  if (window.since !== undefined) query = query.where('opened_at', '>=', window.since);
  if (window.until !== undefined) query = query.where('opened_at', '<', window.until);
  const rows = await query
    .select([epochBucketStart(db, 'opened_at', bucketMs).as('start'), sql<number>`count(*)`.as('n')])
    .groupBy(sql`1`)
    .orderBy(sql`1`)
    .limit(limit)
    .execute();
  return rows.map((r) => ({ start: Number(r.start), count: Number(r.n) }));
}

/** How many of a trigger's messages were opened. */
export async function triggerOpenCount(db: Db, triggerId: string): Promise<number> {
  const row = await db
    .selectFrom('message_opens')
    .select(sql<number>`count(*)`.as('n'))
    .where('trigger_id', '=', triggerId)
    .where('trigger_id', 'is not', null)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/**
 * Up to `limit` of a deleted campaign's opens (found through `message_opens_by_campaign`), so a campaign made
 * again under its id counts none of them; answers how many.
 */
export async function deleteCampaignOpensChunk(
  db: Db,
  projectId: string,
  campaignId: string,
  limit: number,
): Promise<number> {
  const result = await db
    .deleteFrom('message_opens')
    .where(
      'message_id',
      'in',
      db
        .selectFrom('message_opens')
        .select('message_id')
        .where('project_id', '=', projectId)
        .where('campaign_id', '=', campaignId)
        .where('campaign_id', 'is not', null)
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
