import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { sqlDialect } from '../../db/dialect.js';
import { preparedInsert } from '../../db/prepared.js';
import { paddedList } from '../../db/statement-shapes.js';
import type { TriggerDeliveryCountsTable } from '../analytics/delivery-analytics.repository.js';

/** The send-side checkpoint of a trigger (rule `delivery-guarantee`): one row per (trigger, device), never two. */
export interface TriggerDeliveriesTable {
  trigger_id: string;
  device_id: string;
  batch_no: number;
  user_id: string;
  /** Delivery status (rule `delivery-status`); `DELIVERY_RESULT_STATUS_SKIPPED` for a recipient whose message did not render. */
  status: string;
  message_id: string | null;
  /** The provider's raw code, or Herald's skip reason (`TEMPLATE_RENDER_ERROR`, ...). */
  failure_reason: string | null;
  token_action: string | null;
  /** Human detail of a skip (the Liquid error). */
  detail: string | null;
  /** The device's provider (`fcm`, `apns`, `webpush`), for analytics; NULL only on rows older than migration 0015. */
  provider: string | null;
  created_at: number;
  /** The trigger's project and start time: a trigger's rows expire together (and share a partition on PostgreSQL). */
  project_id: string;
  trigger_created_at: number;
  /** Rule `campaign-experiments` (migration 0044): the user's variant id, `control`, or null outside an experiment. */
  variant: string | null;
}

declare module '../../db/database.js' {
  interface Database {
    trigger_deliveries: TriggerDeliveriesTable;
  }
}

const INSERT_CHUNK = 500;
/** The ledger's columns in the order its inserts bind them (bench/lib/floor-records.ts writes the same). */
export const LEDGER_COLUMNS = [
  'trigger_id',
  'device_id',
  'batch_no',
  'user_id',
  'status',
  'message_id',
  'failure_reason',
  'token_action',
  'detail',
  'provider',
  'created_at',
  'project_id',
  'trigger_created_at',
  'variant',
] as const satisfies readonly (keyof TriggerDeliveriesTable)[];

type Inserted = Pick<
  TriggerDeliveriesTable,
  'trigger_id' | 'status' | 'provider' | 'failure_reason' | 'created_at' | 'variant'
>;

/**
 * Inserts rows (statements of up to 64 rows, powers of two; see `preparedInsert`); a device already
 * recorded keeps its row. No conflict target: on PostgreSQL the key also holds the partition key
 * `trigger_created_at`, the same for all of a trigger's rows, so (trigger, device) stays unique.
 * On SQLite it answers the rows it inserted, whose rollup `recordDeliveries` adds (PostgreSQL's
 * statement trigger adds it there).
 */
const insertIgnoringRecorded = preparedInsert<TriggerDeliveriesTable, Inserted>(
  LEDGER_COLUMNS,
  (db: Db, rows: TriggerDeliveriesTable[]) => {
    const insert = db
      .insertInto('trigger_deliveries')
      .values(rows)
      .onConflict((oc) => oc.doNothing());
    return sqlDialect(db).supportsStatementTriggers
      ? insert
      : insert.returning(['trigger_id', 'status', 'provider', 'failure_reason', 'created_at', 'variant']);
  },
  100,
);

/**
 * Records outcomes; a device already recorded for the trigger keeps its first record. On SQLite the
 * per-minute rollup (`trigger_delivery_counts`) is added here, one upsert per group of the rows
 * inserted, in the insert's transaction: a row trigger (migration 0015, dropped by 0017) cost an
 * upsert per ledger row.
 */
export async function recordDeliveries(db: Db, rows: TriggerDeliveriesTable[], sortInPlace = false): Promise<void> {
  if (rows.length === 0) return;
  // In key order, so one statement's rows land on neighbouring b-tree pages (`sortInPlace`: the
  // caller's array is its own, no copy).
  const sorted = (sortInPlace ? rows : [...rows]).sort((a, b) => (a.device_id < b.device_id ? -1 : 1));
  if (sqlDialect(db).supportsStatementTriggers) {
    await insertIgnoringRecorded(db, sorted);
    return;
  }
  const write = async (trx: Db) => addToRollup(trx, await insertIgnoringRecorded(trx, sorted));
  await (db.isTransaction ? write(db) : db.transaction().execute(write));
}

async function addToRollup(db: Db, inserted: Inserted[]): Promise<void> {
  const groups = new Map<string, TriggerDeliveryCountsTable>();
  // Nearly every row of a group falls in its predecessor's rollup row (same trigger, minute and
  // outcome): it is counted there without building the key string (one per row otherwise).
  let last: TriggerDeliveryCountsTable | undefined;
  for (const r of inserted) {
    const minute = Math.floor(r.created_at / 60_000) * 60_000;
    const provider = r.provider ?? '';
    const reason = r.failure_reason ?? '';
    const variant = r.variant ?? '';
    if (
      last &&
      last.minute === minute &&
      last.status === r.status &&
      last.trigger_id === r.trigger_id &&
      last.provider === provider &&
      last.reason === reason &&
      last.variant === variant
    ) {
      last.n++;
      continue;
    }
    const key = `${r.trigger_id}\u0000${minute}\u0000${r.status}\u0000${provider}\u0000${reason}\u0000${variant}`;
    last = groups.get(key);
    if (last) last.n++;
    else
      groups.set(key, (last = { trigger_id: r.trigger_id, minute, status: r.status, provider, reason, variant, n: 1 }));
  }
  if (groups.size === 0) return;
  await db
    .insertInto('trigger_delivery_counts')
    .values([...groups.values()])
    .onConflict((oc) =>
      oc
        .columns(['trigger_id', 'minute', 'status', 'provider', 'reason', 'variant'])
        .doUpdateSet({ n: sql<number>`trigger_delivery_counts.n + excluded.n` }),
    )
    .execute();
}

const chunks = <T>(items: T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

/** Which of `deviceIds` already have an outcome for the trigger (a resumed batch skips them). Primary-key lookups only. */
export async function recordedDevices(db: Db, triggerId: string, deviceIds: string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const part of chunks(deviceIds, INSERT_CHUNK)) {
    const rows = await db
      .selectFrom('trigger_deliveries')
      .select('device_id')
      .where('trigger_id', '=', triggerId)
      // Padded to a few list lengths, so a few statements serve every batch (src/db/statement-shapes.ts).
      .where('device_id', 'in', paddedList(part, INSERT_CHUNK))
      .execute();
    for (const r of rows) out.add(r.device_id);
  }
  return out;
}

export interface DeliveryCount {
  status: string;
  reason: string | null;
  pruned: boolean;
  count: number;
}

/**
 * Outcome counts of one batch of a trigger, from the rows it recorded (`trigger_deliveries_batch`).
 * Skip reasons are kept apart; provider codes are not (they are many, and `status` classifies them).
 */
export async function countDeliveries(db: Db, triggerId: string, batchNo: number): Promise<DeliveryCount[]> {
  const rows = await db
    .selectFrom('trigger_deliveries')
    .select([
      'status',
      sql<string | null>`case when status = 'DELIVERY_RESULT_STATUS_SKIPPED' then failure_reason end`.as('reason'),
      sql<number>`case when token_action is null then 0 else 1 end`.as('pruned'),
      sql<number>`count(*)`.as('count'),
    ])
    .where('trigger_id', '=', triggerId)
    .where('batch_no', '=', batchNo)
    .groupBy(['status', sql`2`, sql`3`])
    .execute();
  return rows.map((r) => ({
    status: r.status,
    reason: r.reason,
    pruned: Number(r.pruned) === 1,
    count: Number(r.count),
  }));
}

export interface LedgerEntry {
  device_id: string;
  project_user_id: string | null;
  provider: string | null;
  status: string;
  failure_reason: string | null;
  detail: string | null;
  message_id: string | null;
  created_at: number;
}

/**
 * One page of a trigger's outcomes in device id order (the ledger's primary key), after `afterDevice`,
 * with the user's `project_user_id` (null once the user is deleted). `trigger.createdAt` names the
 * trigger's partition on PostgreSQL.
 */
export function ledgerPage(
  db: Db,
  trigger: { id: string; createdAt: number },
  limit: number,
  afterDevice?: string,
): Promise<LedgerEntry[]> {
  let query = db
    .selectFrom('trigger_deliveries as td')
    .leftJoin('users as u', 'u.id', 'td.user_id')
    .select([
      'td.device_id',
      'u.project_user_id',
      'td.provider',
      'td.status',
      'td.failure_reason',
      'td.detail',
      'td.message_id',
      'td.created_at',
    ])
    .where('td.trigger_id', '=', trigger.id)
    .where('td.trigger_created_at', '=', trigger.createdAt);
  if (afterDevice !== undefined) query = query.where('td.device_id', '>', afterDevice);
  return query.orderBy('td.device_id').limit(limit).execute();
}

/**
 * The campaign and recipient user of a trigger's send to a device (an open names its message's),
 * and its experiment variant, through the ledger's (trigger, device) key; the user is null once deleted.
 * The ledger is read in subqueries on its partition key too (the trigger's `created_at`), so on
 * PostgreSQL they read only the partition of the trigger's day, pruned as the statement runs, instead of
 * probing every day kept (a join would only filter on it); and the user is a lookup by primary key,
 * which a kept generic plan made on a near-empty `users` table cannot turn into a scan of it
 * (docs/decisions.md, "Storage").
 */
export const ledgerRecipientQuery = (db: Db, triggerId: string, deviceId: string) =>
  db
    .selectFrom('campaign_triggers as t')
    .select((eb) => {
      const ledgerRow = () =>
        eb
          .selectFrom('trigger_deliveries as l')
          .whereRef('l.trigger_id', '=', 't.id')
          .whereRef('l.trigger_created_at', '=', 't.created_at')
          .where('l.device_id', '=', deviceId)
          .limit(1);
      return [
        't.campaign_id',
        ledgerRow().select('l.variant').as('variant'),
        eb
          .selectFrom('users as u')
          .select('u.project_user_id')
          .where('u.id', '=', ledgerRow().select('l.user_id'))
          .as('project_user_id'),
      ];
    })
    .where('t.id', '=', triggerId);

export async function ledgerRecipient(
  db: Db,
  triggerId: string,
  deviceId: string,
): Promise<{ campaignId: string; projectUserId: string | null; variant: string | null } | undefined> {
  const row = await ledgerRecipientQuery(db, triggerId, deviceId).executeTakeFirst();
  return (
    row && { campaignId: row.campaign_id, projectUserId: row.project_user_id ?? null, variant: row.variant ?? null }
  );
}
