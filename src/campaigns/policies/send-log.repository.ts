import { sql, type RawBuilder } from 'kysely';
import type { Db, JsonColumn } from '../../db/database.js';
import { sqlDialect } from '../../db/dialect.js';
import { readJson } from '../../db/json.js';
import { paddedList } from '../../db/statement-shapes.js';
import { DeliveryStatus } from '../../push/push.types.js';

/** The send log (migration 0031): one row per (trigger, user) holding a slot (rules `frequency-caps`, `re-eligibility`). */
export interface UserSendsTable {
  trigger_id: string;
  user_id: string;
  project_id: string;
  campaign_id: string;
  batch_no: number;
  /** The campaign's tags when it sent (a JSON array). */
  tags: JsonColumn;
  /** 1 when the send counts toward the caps (`counts_toward_caps`). */
  counts: number;
  sent_at: number;
}

declare module '../../db/database.js' {
  interface Database {
    user_sends: UserSendsTable;
  }
}

export interface LoggedSend {
  userId: string;
  triggerId: string;
  campaignId: string;
  tags: string[];
  counts: boolean;
  sentAt: number;
}

/**
 * Rows per statement of `insertSlots` (any rows, as retention's tests write them): 1,000, padded to
 * 1,024 (8,192 bound values, under both databases' limits) so that a count is one statement shape
 * of a few (src/db/statement-shapes.ts). The send gate binds its users as one list instead.
 */
const CHUNK = 1000;
const chunks = <T>(items: readonly T[]): T[][] =>
  Array.from({ length: Math.ceil(items.length / CHUNK) }, (_, i) => items.slice(i * CHUNK, (i + 1) * CHUNK));

/**
 * Lock stripes per project: a user's check and slot run under the lock of their stripe. A lock per
 * user made a 1,000-user batch hold 1,000 PostgreSQL advisory locks to its commit, and the server's
 * lock table (max_locks_per_transaction × max_connections, 6,400 by default) filled at a dozen
 * concurrent batches ("out of shared memory"). With stripes a gate holds at most this many; two
 * batches of one project's big audiences wait for each other's gate step (milliseconds, not the send),
 * and single-user sends (event triggers, held sends) rarely share one.
 */
export const USER_LOCK_STRIPES = 64;

/** FNV-1a, 32 bits: a cheap, stable spread of ids over the stripes. */
function stripeOf(userId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < userId.length; i++) hash = Math.imul(hash ^ userId.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % USER_LOCK_STRIPES;
}

/** Holds every one of these users (of one project) until the transaction ends: their check and slot are one step. */
export const lockUsers = (trx: Db, projectId: string, userIds: readonly string[]): Promise<void> =>
  sqlDialect(trx).lockKeys(trx, [...new Set(userIds.map((id) => `user-sends:${projectId}:${stripeOf(id)}`))]);

/**
 * The statement of `loggedSends`. The bound list of users is the outer loop (`cross join`: SQLite
 * keeps that order, PostgreSQL plans the join as usual) and each user's rows are found through
 * `user_sends_campaign`, the log's one index that starts with `user_id` (migration 0052). Written as a plain `in (list)` with the three conditions or-ed,
 * SQLite's planner (no statistics) read every send since the window's start through
 * `user_sends_sent_at` for each batch instead: a cost that grew with the whole log, not the batch.
 */
export function loggedSendsQuery(
  db: Db,
  userIds: readonly string[],
  since: number | undefined,
  campaign: { campaignId: string; since: number } | undefined,
  triggerId?: string,
) {
  const terms: RawBuilder<boolean>[] = [
    ...(triggerId !== undefined ? [sql<boolean>`s.trigger_id = ${triggerId}`] : []),
    ...(since !== undefined ? [sql<boolean>`(s.sent_at >= ${since} and s.counts = 1)`] : []),
    ...(campaign ? [sql<boolean>`(s.campaign_id = ${campaign.campaignId} and s.sent_at >= ${campaign.since})`] : []),
  ];
  // Distinct users: the join yields a user's rows once per time the list names them.
  return sql<Pick<UserSendsTable, 'user_id' | 'trigger_id' | 'campaign_id' | 'tags' | 'counts' | 'sent_at'>>`
    select s.user_id, s.trigger_id, s.campaign_id, s.tags, s.counts, s.sent_at
    from ${sqlDialect(db).textList([...new Set(userIds)], 'list')} cross join user_sends s
    where s.user_id = list.value and (${sql.join(terms, sql` or `)})`;
}

/**
 * The users' logged sends that a check may need: those since `since` (caps), and for re-eligibility
 * every send of `campaign` (`campaign.since`: its window start, or 0 for ever); with `triggerId`,
 * also every slot of that trigger (a batch run again finds the slots its earlier run took), all in
 * one statement (`loggedSendsQuery`).
 */
export async function loggedSends(
  db: Db,
  userIds: readonly string[],
  since: number | undefined,
  campaign: { campaignId: string; since: number } | undefined,
  triggerId?: string,
): Promise<LoggedSend[]> {
  if ((since === undefined && !campaign && triggerId === undefined) || userIds.length === 0) return [];
  const { rows } = await loggedSendsQuery(db, userIds, since, campaign, triggerId).execute(db);
  // Tags stored as text (SQLite) are few distinct lists (one per campaign): parsed once each, and
  // shared (read only).
  const tagLists = new Map<string, string[]>();
  const tagsOf = (stored: unknown): string[] => {
    if (typeof stored !== 'string') return readJson<string[]>(stored);
    let tags = tagLists.get(stored);
    if (!tags) tagLists.set(stored, (tags = readJson<string[]>(stored)));
    return tags;
  };
  return rows.map((r) => {
    const tags = tagsOf(r.tags);
    return {
      userId: r.user_id,
      triggerId: r.trigger_id,
      campaignId: r.campaign_id,
      tags,
      counts: Number(r.counts) === 1,
      sentAt: Number(r.sent_at),
    };
  });
}

/**
 * Slots of one trigger's batch for these users, every column but the user the same: one statement
 * over the bound list (`textList`), whatever its length. A user holding one already keeps it.
 */
export async function takeSlots(
  db: Db,
  slot: Omit<UserSendsTable, 'user_id'>,
  userIds: readonly string[],
): Promise<void> {
  if (userIds.length === 0) return;
  // `where true`: SQLite reads `on conflict` after a bare `from` as a join's `on` otherwise.
  await sql`insert into user_sends (trigger_id, user_id, project_id, campaign_id, batch_no, tags, counts, sent_at)
    select ${slot.trigger_id}, list.value, ${slot.project_id}, ${slot.campaign_id}, ${slot.batch_no}, ${slot.tags},
      ${slot.counts}, ${slot.sent_at}
    from ${sqlDialect(db).textList(userIds, 'list')} where true
    on conflict (trigger_id, user_id) do nothing`.execute(db);
}

/**
 * Each statement's rows padded to a power of two by repeating its last (the repeat is a conflict,
 * ignored), as every list of a batch's users is: one SQL text per size, not per count, in SQLite's
 * statement cache (src/db/statement-shapes.ts).
 */
export async function insertSlots(db: Db, rows: UserSendsTable[]): Promise<void> {
  for (const part of chunks(rows))
    await db
      .insertInto('user_sends')
      .values(paddedList(part, Infinity))
      .onConflict((oc) => oc.columns(['trigger_id', 'user_id']).doNothing())
      .execute();
}

/**
 * Gives back the slots of a closing batch whose user no device accepted (failed, skipped or never
 * sent): a slot stands for a send the user received. One statement over the batch's ledger rows.
 */
export async function releaseUnusedSlots(db: Db, triggerId: string, batchNo: number): Promise<void> {
  await db
    .deleteFrom('user_sends')
    .where('trigger_id', '=', triggerId)
    .where('batch_no', '=', batchNo)
    // `not in` over the batch's accepted rows: read once (a hashed set), not once per slot.
    .where('user_id', 'not in', (eb) =>
      eb
        .selectFrom('trigger_deliveries')
        .select('user_id')
        .where('trigger_id', '=', triggerId)
        .where('batch_no', '=', batchNo)
        .where('status', '=', DeliveryStatus.ACCEPTED),
    )
    .execute();
}

/**
 * Rule `re-eligibility` as SQL over `users.id`: the user holds a logged send of the campaign since
 * `since` (0: ever), through the `(user_id, campaign_id, sent_at)` index.
 */
export const sentSinceCondition = (campaignId: string, since: number): RawBuilder<boolean> =>
  sql<boolean>`exists (select 1 from user_sends s where s.user_id = users.id and s.campaign_id = ${campaignId} and s.sent_at >= ${since})`;
