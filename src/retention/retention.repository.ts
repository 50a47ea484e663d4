import { sql, type ColumnType, type RawBuilder } from 'kysely';
import type { Db, JsonColumn } from '../db/database.js';
import { readJson, writeJson } from '../db/json.js';
import { TERMINAL_STATES } from '../a2a/model.js';
import {
  finishedTriggersWithLedger,
  toLedgerOwner,
  UNFINISHED_TRIGGER_STATES,
  type LedgerOwner,
} from '../campaigns/triggers/ledger-deletion.repository.js';
import type { RetentionKind } from '../settings/retention-settings.js';

declare module '../db/database.js' {
  interface ProjectsTable {
    /** Per-project retention overrides (`{ "events": 30 }`), or null for the operator's defaults. */
    retention: ColumnType<JsonColumn | null, JsonColumn | null | undefined, JsonColumn | null>;
  }
}

/** A table retention deletes from: its time column, the key a chunk is chosen by, and which rows may go. */
export interface RetainedTable {
  table:
    | 'deliveries'
    | 'events'
    | 'trigger_deliveries'
    | 'a2a_tasks'
    | 'event_pending_sends'
    | 'held_sends'
    | 'message_opens'
    | 'conversions';
  kind: RetentionKind;
  time: string;
  key: readonly string[];
  /** Rows that may be deleted once old (an unfinished task must stay; the ledger's rule is in `expiringLedgerTriggers`). */
  deletable?: RawBuilder<boolean>;
  /** The campaign ledger: its rows are found through their trigger (`deleteLedgerChunk`), not by `time`. */
  byTrigger?: true;
}

export const RETAINED_TABLES: readonly RetainedTable[] = [
  { table: 'deliveries', kind: 'deliveries', time: 'created_at', key: ['message_id'] },
  {
    table: 'trigger_deliveries',
    kind: 'deliveries',
    time: 'trigger_created_at',
    key: ['trigger_id', 'device_id'],
    byTrigger: true,
  },
  { table: 'events', kind: 'events', time: 'received_at', key: ['seq'] },
  // A message's open is part of its delivery record (it names the user): it goes with the deliveries' days.
  { table: 'message_opens', kind: 'deliveries', time: 'received_at', key: ['message_id'] },
  // So is a send's conversion (it names the user and the event): chosen by when it was stored (`conversions_received`).
  { table: 'conversions', kind: 'deliveries', time: 'received_at', key: ['trigger_id', 'user_id', 'goal_index'] },
  {
    table: 'a2a_tasks',
    kind: 'tasks',
    time: 'status_timestamp',
    key: ['id'],
    deletable: sql<boolean>`state in (${sql.join([...TERMINAL_STATES])})`,
  },
  // A fired or canceled pending send of an event-triggered campaign, or send held for quiet hours, is
  // part of its send's record (its ledger goes with the deliveries' days too); one still waiting stays,
  // whatever its age. Chosen through the `(state, due_at)` index their due jobs claim by.
  ...(['event_pending_sends', 'held_sends'] as const).map((table): RetainedTable => ({
    table,
    kind: 'deliveries',
    time: 'due_at',
    key: ['id'],
    deletable: sql<boolean>`state in ('fired', 'canceled')`,
  })),
];

export interface ChunkScope {
  /** The table itself, or one of its partitions (PostgreSQL's default partition). */
  relation: string;
  /** Only this project's rows; all projects' when absent. */
  projectId?: string;
  /** Rows stamped before this instant are expired. */
  before: number;
  limit: number;
}

/**
 * Deletes up to `limit` expired rows in one statement, chosen by key through the retention index
 * (the campaign ledger has none: `deleteLedgerChunk`), so each statement holds its locks (SQLite's
 * write lock, PostgreSQL's row locks) only briefly.
 * The outer conditions repeat the inner ones, so PostgreSQL prunes partitions in both.
 */
export async function deleteExpiredChunk(db: Db, spec: RetainedTable, scope: ChunkScope): Promise<number> {
  const conditions = [sql`${sql.ref(spec.time)} < ${scope.before}`];
  if (scope.projectId !== undefined) conditions.push(sql`project_id = ${scope.projectId}`);
  if (spec.deletable) conditions.push(spec.deletable);
  const where = sql.join(conditions, sql` and `);
  const key = sql.join(spec.key.map((k) => sql.ref(k)));
  const relation = sql.table(scope.relation);
  const result = await sql`delete from ${relation} where ${where} and (${key}) in
    (select ${key} from ${relation} where ${where} limit ${scope.limit})`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}

/**
 * A project's finished triggers started before `before` whose ledger is not marked deleted, oldest
 * first, through the partial index of unmarked triggers (`campaign_triggers_ledger_retention`, migration
 * 0021): the triggers emptied by earlier passes are not in it. An unfinished trigger keeps its ledger.
 */
export async function expiringLedgerTriggers(
  db: Db,
  projectId: string,
  before: number,
  limit: number,
): Promise<LedgerOwner[]> {
  const rows = await finishedTriggersWithLedger(db, projectId)
    .where('created_at', '<', before)
    .orderBy('created_at')
    .limit(limit)
    .execute();
  return rows.map(toLedgerOwner);
}

/** The trigger's ledger rows are gone: later passes skip it. */
export async function markLedgerExpired(db: Db, triggerId: string, now: number): Promise<void> {
  await db.updateTable('campaign_triggers').set({ ledger_expired_at: now }).where('id', '=', triggerId).execute();
}

export interface ProjectRetentionRow {
  projectId: string;
  retention: unknown;
}

/** Every project with its stored overrides (few rows: one per tenant). */
export async function listProjectRetention(db: Db): Promise<ProjectRetentionRow[]> {
  const rows = await db.selectFrom('projects').select(['id', 'retention']).orderBy('id').execute();
  return rows.map((r) => ({ projectId: r.id, retention: r.retention === null ? null : readJson(r.retention) }));
}

export async function findProjectRetention(db: Db, projectId: string): Promise<{ retention: unknown } | undefined> {
  const row = await db.selectFrom('projects').select('retention').where('id', '=', projectId).executeTakeFirst();
  return row && { retention: row.retention === null ? null : readJson(row.retention) };
}

/** Stores a project's overrides (null: back to the defaults); false when there is no such project. */
export async function storeProjectRetention(
  db: Db,
  projectId: string,
  retention: Record<string, number> | null,
): Promise<boolean> {
  const result = await db
    .updateTable('projects')
    .set({ retention: retention === null ? null : writeJson(retention) })
    .where('id', '=', projectId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** PostgreSQL: whether an unfinished trigger started within [from, to) (its ledger partition must stay). */
export async function hasUnfinishedTriggerBetween(db: Db, from: number, to: number): Promise<boolean> {
  const row = await db
    .selectFrom('campaign_triggers')
    .select('id')
    .where('state', 'in', UNFINISHED_TRIGGER_STATES)
    .where('created_at', '>=', from)
    .where('created_at', '<', to)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
