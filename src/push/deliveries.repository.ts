import type { Db } from '../db/database.js';
import { preparedInsert } from '../db/prepared.js';
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

/**
 * Records messages, 100 rows per statement (13 parameters each keeps a statement far below both
 * databases' limits); a send request writes up to 500 rows.
 */
export const insertDeliveries = preparedInsert<DeliveriesTable>(
  COLUMNS,
  (db: Db, rows: DeliveriesTable[]) => db.insertInto('deliveries').values(rows),
  100,
);

/** Which of `messageIds` are stored already. */
export async function storedMessageIds(db: Db, messageIds: string[]): Promise<Set<string>> {
  if (messageIds.length === 0) return new Set();
  const rows = await db.selectFrom('deliveries').select('message_id').where('message_id', 'in', messageIds).execute();
  return new Set(rows.map((r) => r.message_id));
}

export function findDelivery(db: Db, projectId: string, messageId: string): Promise<DeliveriesTable | undefined> {
  return db
    .selectFrom('deliveries')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('message_id', '=', messageId)
    .executeTakeFirst();
}
