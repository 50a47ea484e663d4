import type { Db, JsonColumn } from '../../db/database.js';
import type { Provider } from '../push.types.js';

export interface PushCredentialsTable {
  project_id: string;
  provider: Provider;
  /** Non-secret settings (JSON): FCM project and account, APNs key id/team/topic, VAPID public key. */
  settings: JsonColumn;
  /** Sealed secret (`crypto/secret-box.ts`). */
  secret: string;
  created_at: number;
  updated_at: number;
  /** The last configuration error a provider reported for these credentials, until they are saved again. */
  problem_reason: string | null;
  problem_at: number | null;
  /** Deliveries that met a configuration error since the credentials were saved. */
  problem_count: number;
}

declare module '../../db/database.js' {
  interface Database {
    push_credentials: PushCredentialsTable;
  }
}

export type CredentialsRow = Omit<PushCredentialsTable, 'problem_reason' | 'problem_at' | 'problem_count'>;

/** Saving credentials clears their recorded problem: the operator has acted on it. */
export async function upsertCredentials(db: Db, row: CredentialsRow): Promise<void> {
  const cleared = { problem_reason: null, problem_at: null, problem_count: 0 };
  await db
    .insertInto('push_credentials')
    .values({ ...row, ...cleared })
    .onConflict((oc) =>
      oc
        .columns(['project_id', 'provider'])
        .doUpdateSet({ settings: row.settings, secret: row.secret, updated_at: row.updated_at, ...cleared }),
    )
    .execute();
}

export async function recordProblem(
  db: Db,
  projectId: string,
  provider: Provider,
  reason: string,
  count: number,
  at: number,
): Promise<void> {
  await db
    .updateTable('push_credentials')
    .set((eb) => ({ problem_reason: reason, problem_at: at, problem_count: eb('problem_count', '+', count) }))
    .where('project_id', '=', projectId)
    .where('provider', '=', provider)
    .execute();
}

export async function findSettings(
  db: Db,
  projectId: string,
  provider: Provider,
): Promise<Pick<PushCredentialsTable, 'settings'> | undefined> {
  return db
    .selectFrom('push_credentials')
    .select('settings')
    .where('project_id', '=', projectId)
    .where('provider', '=', provider)
    .executeTakeFirst();
}

export function listCredentials(db: Db, projectId: string): Promise<PushCredentialsTable[]> {
  return db.selectFrom('push_credentials').selectAll().where('project_id', '=', projectId).execute();
}

export async function deleteCredentials(db: Db, projectId: string, provider: Provider): Promise<boolean> {
  const result = await db
    .deleteFrom('push_credentials')
    .where('project_id', '=', projectId)
    .where('provider', '=', provider)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
