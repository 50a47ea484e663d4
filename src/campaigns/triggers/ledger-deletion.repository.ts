import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { sqlDialect } from '../../db/dialect.js';

/**
 * A trigger still writing its ledger: a scheduled one too, whose rows, stamped with its creation, are
 * still to come. Its ledger is its sends' exactly-once record, so nothing takes it apart piecewise.
 */
export const UNFINISHED_TRIGGER_STATES = ['scheduled', 'queued', 'running'] as ('scheduled' | 'queued' | 'running')[];

/** A trigger as its ledger rows are found: by its id and, their partition key on PostgreSQL, its start. */
export interface LedgerOwner {
  id: string;
  createdAt: number;
}

/**
 * Deletes up to `limit` ledger rows of one trigger from `relation` (the table, or on PostgreSQL its
 * default partition): those up to the `limit`-th device id, one range of the primary key's
 * `(trigger_id, device_id)` prefix, which is cheaper than matching each chosen key again. On
 * PostgreSQL the rows' partition key (the trigger's start) is given too, so only the trigger's
 * partition is searched. Retention and a campaign's deletion both take a ledger apart this way.
 */
export async function deleteLedgerChunk(
  db: Db,
  relation: string,
  trigger: LedgerOwner,
  limit: number,
): Promise<number> {
  const where = sqlDialect(db).supportsPartitions
    ? sql`trigger_id = ${trigger.id} and trigger_created_at = ${trigger.createdAt}`
    : sql`trigger_id = ${trigger.id}`;
  const table = sql.table(relation);
  const result = await sql`delete from ${table} where ${where} and device_id <= (select max(device_id) from
    (select device_id from ${table} where ${where} order by device_id limit ${limit}) as chunk)`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}

/**
 * A project's finished triggers whose ledger retention has not deleted yet: where retention and a
 * campaign's deletion look for ledgers to take apart. An unfinished trigger's ledger is left alone.
 */
export const finishedTriggersWithLedger = (db: Db, projectId: string) =>
  db
    .selectFrom('campaign_triggers')
    .select(['id', 'created_at'])
    .where('project_id', '=', projectId)
    .where('ledger_expired_at', 'is', null)
    .where('state', 'not in', UNFINISHED_TRIGGER_STATES);

export const toLedgerOwner = (row: { id: string; created_at: number }): LedgerOwner => ({
  id: row.id,
  createdAt: Number(row.created_at),
});

/**
 * A campaign's finished triggers with a ledger (through `campaign_triggers_list`). An unfinished
 * trigger's ledger is left to the campaign's cascade, which takes it in one statement with the
 * trigger: a batch run again meanwhile would otherwise find its sends' record gone and send again.
 */
export async function campaignLedgerOwners(db: Db, projectId: string, campaignId: string): Promise<LedgerOwner[]> {
  const rows = await finishedTriggersWithLedger(db, projectId).where('campaign_id', '=', campaignId).execute();
  return rows.map(toLedgerOwner);
}
