import type { Db } from '../../db/database.js';
import type { ProtocolVersion, PushConfig } from '../model.js';

export interface A2aPushConfigsTable {
  task_id: string;
  id: string;
  project_id: string;
  url: string;
  token: string | null;
  auth_scheme: string | null;
  auth_credentials: string | null;
  protocol_version: ProtocolVersion;
  created_at: number;
  /** 1 when `token` and `auth_credentials` hold sealed text (migration 0008); 0 on older rows. */
  secrets_sealed: number;
}

declare module '../../db/database.js' {
  interface Database {
    a2a_push_configs: A2aPushConfigsTable;
  }
}

export interface StoredPushConfig extends PushConfig {
  projectId: string;
  protocolVersion: ProtocolVersion;
  /** Whether `token` and `authentication.credentials` are sealed text (as stored) or plain. */
  sealed?: boolean;
}

const toConfig = (r: A2aPushConfigsTable): StoredPushConfig => ({
  id: r.id,
  taskId: r.task_id,
  projectId: r.project_id,
  url: r.url,
  protocolVersion: r.protocol_version,
  sealed: Number(r.secrets_sealed) === 1,
  ...(r.token !== null ? { token: r.token } : {}),
  ...(r.auth_scheme !== null
    ? {
        authentication: {
          scheme: r.auth_scheme,
          ...(r.auth_credentials !== null ? { credentials: r.auth_credentials } : {}),
        },
      }
    : {}),
});

/** Inserts the config, or replaces the task's config of the same id. */
export async function upsertConfig(db: Db, config: StoredPushConfig, now: number): Promise<void> {
  const values = {
    url: config.url,
    token: config.token ?? null,
    auth_scheme: config.authentication?.scheme ?? null,
    auth_credentials: config.authentication?.credentials ?? null,
    protocol_version: config.protocolVersion,
    secrets_sealed: config.sealed ? 1 : 0,
  };
  await db
    .insertInto('a2a_push_configs')
    .values({ task_id: config.taskId, id: config.id, project_id: config.projectId, created_at: now, ...values })
    .onConflict((oc) => oc.columns(['task_id', 'id']).doUpdateSet(values))
    .execute();
}

export async function findConfig(
  db: Db,
  projectId: string,
  taskId: string,
  id: string,
): Promise<StoredPushConfig | undefined> {
  const row = await db
    .selectFrom('a2a_push_configs')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('task_id', '=', taskId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && toConfig(row);
}

/** Oldest first. */
export async function listConfigs(db: Db, projectId: string, taskId: string): Promise<StoredPushConfig[]> {
  const rows = await db
    .selectFrom('a2a_push_configs')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('task_id', '=', taskId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(toConfig);
}

export async function deleteConfig(db: Db, projectId: string, taskId: string, id: string): Promise<void> {
  await db
    .deleteFrom('a2a_push_configs')
    .where('project_id', '=', projectId)
    .where('task_id', '=', taskId)
    .where('id', '=', id)
    .execute();
}

/** Rows whose token or credentials are still plain text (written before migration 0008). */
export async function listUnsealedConfigs(db: Db, limit: number): Promise<StoredPushConfig[]> {
  const rows = await db
    .selectFrom('a2a_push_configs')
    .selectAll()
    .where('secrets_sealed', '=', 0)
    .orderBy('task_id')
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map(toConfig);
}

export async function replaceSecrets(db: Db, config: StoredPushConfig): Promise<void> {
  await db
    .updateTable('a2a_push_configs')
    .set({
      token: config.token ?? null,
      auth_credentials: config.authentication?.credentials ?? null,
      secrets_sealed: config.sealed ? 1 : 0,
    })
    .where('task_id', '=', config.taskId)
    .where('id', '=', config.id)
    .where('secrets_sealed', '=', 0)
    .execute();
}
