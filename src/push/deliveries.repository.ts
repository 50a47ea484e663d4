import type { CompiledQuery } from 'kysely';
import type { Db } from '../db/database.js';
import { dialectOf, type Dialect } from '../db/dialect.js';
import type { DeliveryStatus, Provider } from './push.types.js';

/** One message: a send to one device, or an item that reached no device (S1: every send is stored). */
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

const COLUMNS = [
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

/** Rows per INSERT: 13 parameters each keeps a statement far below both databases' limits. */
const CHUNK = 100;

/**
 * Multi-row INSERTs compiled once per dialect and row count, then run with fresh values: building a
 * 100-row Kysely insert costs more than SQLite takes to run it, and a send request writes 500 rows.
 */
const compiled = new Map<string, { query: CompiledQuery; slots: Array<[number, number] | undefined> }>();

function insertFor(db: Db, rows: number) {
  const dialect: Dialect = dialectOf(db);
  const key = `${dialect}:${rows}`;
  let entry = compiled.get(key);
  if (!entry) {
    const PREFIX = '\u0000slot:';
    const marker = (r: number, c: number) => `${PREFIX}${r}:${c}`;
    const values = Array.from(
      { length: rows },
      (_, r) => Object.fromEntries(COLUMNS.map((column, c) => [column, marker(r, c)])) as unknown as DeliveriesTable,
    );
    const query = db.insertInto('deliveries').values(values).compile();
    const slots = query.parameters.map((p) => {
      if (typeof p !== 'string' || !p.startsWith(PREFIX)) return undefined;
      const [r, c] = p.slice(PREFIX.length).split(':').map(Number);
      return [r!, c!] as [number, number];
    });
    entry = { query, slots };
    compiled.set(key, entry);
  }
  return entry;
}

export async function insertDeliveries(db: Db, rows: DeliveriesTable[]): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) {
    const chunk = rows.slice(i, i + CHUNK);
    const { query, slots } = insertFor(db, chunk.length);
    const parameters = slots.map((slot, k) => (slot ? chunk[slot[0]]![COLUMNS[slot[1]]!] : query.parameters[k]));
    await db.executeQuery({ ...query, parameters });
  }
}

export function findDelivery(db: Db, projectId: string, messageId: string): Promise<DeliveriesTable | undefined> {
  return db
    .selectFrom('deliveries')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('message_id', '=', messageId)
    .executeTakeFirst();
}
