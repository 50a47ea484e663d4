import { sql, type CompiledQuery } from 'kysely';
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
/** Rows per insert statement: a fan-out records about this many outcomes at a time. */
const PREPARED_ROWS = 100;
const COLUMNS = [
  'trigger_id',
  'device_id',
  'batch_no',
  'user_id',
  'status',
  'message_id',
  'failure_reason',
  'token_action',
  'detail',
  'created_at',
] as const;

interface PreparedInsert {
  compiled: CompiledQuery;
  /** For each parameter of the compiled statement, the row and column whose value it takes. */
  slots: Array<readonly [number, number]>;
}

/**
 * The insert of `rows` rows, built and compiled by Kysely once per database adapter and row count:
 * building a 100-row insert costs about as much as running it on SQLite, and a fan-out runs it once
 * per `sendToDevices` call. Values are bound positionally from the rows at each execution.
 */
const preparedInserts = new WeakMap<object, Map<number, PreparedInsert>>();
function preparedInsert(db: Db, rows: number): PreparedInsert {
  const adapter = db.getExecutor().adapter;
  let byRows = preparedInserts.get(adapter);
  if (!byRows) preparedInserts.set(adapter, (byRows = new Map()));
  let prepared = byRows.get(rows);
  if (!prepared) {
    const placeholder = (r: number, c: number) => `__herald_slot:${r}:${c}`;
    const values = Array.from(
      { length: rows },
      (_, r) =>
        Object.fromEntries(COLUMNS.map((name, c) => [name, placeholder(r, c)])) as unknown as TriggerDeliveriesTable,
    );
    const compiled = db
      .insertInto('trigger_deliveries')
      .values(values)
      .onConflict((oc) => oc.columns(['trigger_id', 'device_id']).doNothing())
      .compile();
    const slots = compiled.parameters.map((p) => {
      const match = typeof p === 'string' ? /^__herald_slot:(\d+):(\d+)$/.exec(p) : null;
      if (!match) throw new Error('unexpected parameter in the prepared ledger insert');
      return [Number(match[1]), Number(match[2])] as const;
    });
    byRows.set(rows, (prepared = { compiled, slots }));
  }
  return prepared;
}

/** Records outcomes; a device already recorded for the trigger keeps its first record. */
export async function recordDeliveries(db: Db, rows: TriggerDeliveriesTable[]): Promise<void> {
  // In key order, so one statement's rows land on neighbouring b-tree pages.
  const sorted = [...rows].sort((a, b) => (a.device_id < b.device_id ? -1 : 1));
  for (let i = 0; i < sorted.length; i += PREPARED_ROWS) {
    const part = sorted.slice(i, i + PREPARED_ROWS);
    const { compiled, slots } = preparedInsert(db, part.length);
    await db.executeQuery({ ...compiled, parameters: slots.map(([r, c]) => part[r]![COLUMNS[c]!]) });
  }
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
      .where('device_id', 'in', part)
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
