import type { Db } from '../db/database.js';
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

/** Rows per INSERT: 13 parameters each keeps a statement far below both databases' limits. */
const CHUNK = 250;

export async function insertDeliveries(db: Db, rows: DeliveriesTable[]): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) {
    await db.insertInto('deliveries').values(rows.slice(i, i + CHUNK)).execute();
  }
}

export function findDelivery(db: Db, projectId: string, messageId: string): Promise<DeliveriesTable | undefined> {
  return db.selectFrom('deliveries').selectAll().where('project_id', '=', projectId).where('message_id', '=', messageId).executeTakeFirst();
}
