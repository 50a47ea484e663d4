import type { Db, JsonColumn } from '../../db/database.js';
import type { Provider } from '../push.types.js';

export interface PushCredentialsTable {
  project_id: string;
  provider: Provider;
  /** Non-secret settings (JSON): FCM project and account, APNs key id/team/topic, VAPID public key. */
  settings: JsonColumn;
  /** Sealed secret (`secret-box.ts`). */
  secret: string;
  created_at: number;
  updated_at: number;
}

declare module '../../db/database.js' {
  interface Database {
    push_credentials: PushCredentialsTable;
  }
}

export async function upsertCredentials(db: Db, row: PushCredentialsTable): Promise<void> {
  await db
    .insertInto('push_credentials')
    .values(row)
    .onConflict((oc) => oc.columns(['project_id', 'provider']).doUpdateSet({ settings: row.settings, secret: row.secret, updated_at: row.updated_at }))
    .execute();
}

export function listCredentials(db: Db, projectId: string): Promise<PushCredentialsTable[]> {
  return db.selectFrom('push_credentials').selectAll().where('project_id', '=', projectId).execute();
}

export async function deleteCredentials(db: Db, projectId: string, provider: Provider): Promise<boolean> {
  const result = await db.deleteFrom('push_credentials').where('project_id', '=', projectId).where('provider', '=', provider).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
