import { sql, type CompiledQuery } from 'kysely';
import type { Db } from '../db/database.js';
import { sqlDialect } from '../db/dialect.js';
import { dayStart } from '../db/partitions.js';
import { paddedList, statementSizes } from '../db/statement-shapes.js';
import { DAY_MS } from '../lib/clock.js';
import { messageIdTime } from './message-id.js';
import type { DeliveryStatus, Provider } from './push.types.js';

/** One message: a send to one device, or an item that reached no device (every send is stored, rule `one-data-layer`). */
export interface DeliveriesTable {
  message_id: string;
  project_id: string;
  /** What the caller targeted: a user (`project_user_id`) or a device (`device_id`). */
  target_type: 'user' | 'device';
  target_id: string;
  device_id: string | null;
  provider: Provider | null;
  status: DeliveryStatus;
  failure_reason: string | null;
  provider_message_id: string | null;
  trigger_id: string | null;
  attempts: number;
  created_at: number;
  completed_at: number;
}

declare module '../db/database.js' {
  interface Database {
    deliveries: DeliveriesTable;
  }
}

/** The delivery record's columns in the order its inserts bind them (bench/lib/floor-records.ts writes the same). */
export const DELIVERY_COLUMNS = [
  'message_id',
  'project_id',
  'target_type',
  'target_id',
  'device_id',
  'provider',
  'status',
  'failure_reason',
  'provider_message_id',
  'trigger_id',
  'attempts',
  'created_at',
  'completed_at',
] as const satisfies readonly (keyof DeliveriesTable)[];

/** 13 parameters a row keeps a statement far below both databases' limits; a send request writes up to 500 rows. */
const ROWS_PER_STATEMENT = 100;
const MARKER = '\u0000deliveries:';

/** The INSERT of `rowCount` rows, compiled once per dialect and row count. */
const statements = new Map<string, CompiledQuery>();

function insertStatement(db: Db, rowCount: number): CompiledQuery {
  const key = `${sqlDialect(db).name}:${rowCount}`;
  let compiled = statements.get(key);
  if (compiled) return compiled;
  const marker = (k: number) => `${MARKER}${k}`;
  const rows = Array.from({ length: rowCount }, (_, r) =>
    Object.fromEntries(DELIVERY_COLUMNS.map((column, c) => [column, marker(r * DELIVERY_COLUMNS.length + c)])),
  ) as unknown as DeliveriesTable[];
  compiled = db.insertInto('deliveries').values(rows).compile();
  // `valuesOf` fills the parameters by position: they must be the markers, row by row, in DELIVERY_COLUMNS order.
  if (compiled.parameters.some((value, k) => value !== marker(k)))
    throw new Error('deliveries insert: the compiled parameters are not row by row');
  statements.set(key, compiled);
  return compiled;
}

/** A row's values in DELIVERY_COLUMNS order, each read by name (not a keyed read per column: this runs for every row sent). */
function valuesOf(rows: readonly DeliveriesTable[], from: number, to: number): unknown[] {
  const values: unknown[] = [];
  for (let k = from; k < to; k++) {
    const r = rows[k]!;
    values.push(
      r.message_id,
      r.project_id,
      r.target_type,
      r.target_id,
      r.device_id,
      r.provider,
      r.status,
      r.failure_reason,
      r.provider_message_id,
      r.trigger_id,
      r.attempts,
      r.created_at,
      r.completed_at,
    );
  }
  return values;
}

/**
 * Records messages in multi-row INSERTs of up to 64 rows (powers of two), each statement built and
 * compiled once. Several statements outside a transaction run in one: a commit per statement costs
 * CPU per row on SQLite and a WAL flush each on PostgreSQL.
 */
export async function insertDeliveries(db: Db, rows: readonly DeliveriesTable[]): Promise<void> {
  // Power-of-two row counts: a few compiled statements, not one per count (src/db/statement-shapes.ts).
  const sizes = statementSizes(rows.length, ROWS_PER_STATEMENT);
  if (sizes.length > 1 && !db.isTransaction)
    return db.transaction().execute((trx) => insertInStatements(trx, rows, sizes));
  return insertInStatements(db, rows, sizes);
}

async function insertInStatements(db: Db, rows: readonly DeliveriesTable[], sizes: number[]): Promise<void> {
  let from = 0;
  for (const size of sizes) {
    await db.executeQuery({ ...insertStatement(db, size), parameters: valuesOf(rows, from, from + size) });
    from += size;
  }
}

/**
 * The UTC days (`created_at` bounds) the messages `messageIds` were made in, read from their ids: on
 * PostgreSQL the partitions to read. `undefined` when an id does not carry its time (every partition).
 */
function createdDays(messageIds: readonly string[]): { from: number; to: number } | undefined {
  let from = Infinity;
  let to = -Infinity;
  for (const id of messageIds) {
    const at = messageIdTime(id);
    if (at === undefined) return undefined;
    from = Math.min(from, dayStart(at));
    to = Math.max(to, dayStart(at) + DAY_MS);
  }
  return { from, to };
}

/** Which of `messageIds` are stored already. */
export async function storedMessageIds(db: Db, messageIds: string[]): Promise<Set<string>> {
  if (messageIds.length === 0) return new Set();
  const rows = await storedMessageIdsQuery(db, messageIds).execute();
  return new Set(rows.map((r) => r.message_id));
}

/** The statement of `storedMessageIds` (a test reads its plan). */
export function storedMessageIdsQuery(db: Db, messageIds: string[]) {
  const days = createdDays(messageIds);
  // Padded: a commit of any size shares a few statement texts (src/db/statement-shapes.ts).
  let query = db
    .selectFrom('deliveries')
    .select('message_id')
    .where('message_id', 'in', paddedList(messageIds, Infinity));
  if (days) query = query.where('created_at', '>=', days.from).where('created_at', '<', days.to);
  return query;
}

export function findDelivery(db: Db, projectId: string, messageId: string): Promise<DeliveriesTable | undefined> {
  return findDeliveryQuery(db, projectId, messageId).executeTakeFirst();
}

/**
 * The statement of `findDelivery` (a test reads its plan): the id's day bounds `created_at`, the
 * partition key, so PostgreSQL probes one day's partition instead of every kept day's (31 at the
 * default retention) and the default partition.
 */
export function findDeliveryQuery(db: Db, projectId: string, messageId: string) {
  const days = createdDays([messageId]);
  let query = db
    .selectFrom('deliveries')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('message_id', '=', messageId);
  if (days) query = query.where('created_at', '>=', days.from).where('created_at', '<', days.to);
  return query;
}

/**
 * Up to `limit` messages addressed to the user `projectUserId`, newest first (message ids are
 * UUIDv7), before the message id `before` when given: a range of the partial index
 * `deliveries_to_user`. Its condition is written as a literal, so the statement itself says the
 * index applies, whatever a planner does with bound values.
 */
export function deliveriesToUser(
  db: Db,
  projectId: string,
  projectUserId: string,
  limit: number,
  before?: string,
): Promise<DeliveriesTable[]> {
  return deliveriesToUserQuery(db, projectId, projectUserId, limit, before).execute();
}

/** The statement of `deliveriesToUser` (a test reads its plan). */
export function deliveriesToUserQuery(
  db: Db,
  projectId: string,
  projectUserId: string,
  limit: number,
  before?: string,
) {
  let query = db
    .selectFrom('deliveries')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('target_type', '=', sql.lit('user'))
    .where('target_id', '=', projectUserId);
  if (before !== undefined) query = query.where('message_id', '<', before);
  return query.orderBy('message_id', 'desc').limit(limit);
}
