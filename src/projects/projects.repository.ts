import type { Db, IdentityVerificationTable } from '../db/database.js';
import { readJson, writeJson } from '../db/json.js';
import { preparedQuery } from '../db/prepared.js';
import type { KeyKind } from './api-keys.js';
import { keysChanged } from './key-cache.js';

export interface ProjectRow {
  id: string;
  name: string;
  createdAt: number;
  rateLimits: Record<string, unknown> | null;
}

export async function insertProject(db: Db, project: { id: string; name: string; createdAt: number }): Promise<void> {
  await db
    .insertInto('projects')
    .values({ id: project.id, name: project.name, created_at: project.createdAt, rate_limits: null })
    .execute();
}

export async function insertApiKey(
  db: Db,
  key: { id: string; projectId: string; kind: KeyKind; prefix: string; digest: string; createdAt: number },
): Promise<void> {
  await db
    .insertInto('api_keys')
    .values({
      id: key.id,
      project_id: key.projectId,
      kind: key.kind,
      prefix: key.prefix,
      digest: key.digest,
      created_at: key.createdAt,
      revoked_at: null,
    })
    .execute();
}

/** What identity verification needs of a project's setting: the sealed signing key and when it was made. */
export type IdentitySetting = Pick<IdentityVerificationTable, 'signing_key' | 'created_at'>;

/**
 * Runs on every authenticated request, hence prepared once. A public key's row carries its project's
 * identity-verification setting (`identity_signing_key` null: off), read in the same statement, so a
 * public-key request that checks it needs no read of its own (identity.http.ts).
 */
const activeKeysByPrefix = preparedQuery(['prefix'], (db: Db, p: { prefix: string }) =>
  db
    .selectFrom('api_keys')
    .leftJoin('identity_verification as iv', (join) =>
      join.onRef('iv.project_id', '=', 'api_keys.project_id').on('api_keys.kind', '=', 'public'),
    )
    .select([
      'api_keys.id',
      'api_keys.project_id',
      'api_keys.kind',
      'api_keys.digest',
      'iv.signing_key as identity_signing_key',
      'iv.created_at as identity_created_at',
    ])
    .where('api_keys.prefix', '=', p.prefix)
    .where('api_keys.revoked_at', 'is', null),
);

export function findActiveKeysByPrefix(db: Db, prefix: string) {
  return activeKeysByPrefix(db, { prefix });
}

export async function listProjects(db: Db): Promise<ProjectRow[]> {
  const rows = await db.selectFrom('projects').selectAll().orderBy('created_at').orderBy('id').execute();
  return rows.map(toProjectRow);
}

export async function findProject(db: Db, projectId: string): Promise<ProjectRow | undefined> {
  const row = await db.selectFrom('projects').selectAll().where('id', '=', projectId).executeTakeFirst();
  return row && toProjectRow(row);
}

export async function countProjects(db: Db): Promise<number> {
  const row = await db
    .selectFrom('projects')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export function listKeys(db: Db, projectId: string) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'kind', 'prefix', 'created_at', 'revoked_at'])
    .where('project_id', '=', projectId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function revokeKeys(
  db: Db,
  projectId: string,
  filter: { id?: string; kind?: KeyKind },
  at: number,
): Promise<number> {
  let query = db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('project_id', '=', projectId)
    .where('revoked_at', 'is', null);
  if (filter.id !== undefined)
    query = query.where((eb) => eb.or([eb('id', '=', filter.id!), eb('prefix', '=', filter.id!)]));
  if (filter.kind !== undefined) query = query.where('kind', '=', filter.kind);
  // Before and after: a lookup that raced the update cannot leave its result cached (key-cache.ts).
  keysChanged();
  const result = await query.executeTakeFirst();
  keysChanged();
  return Number(result.numUpdatedRows);
}

export async function setProjectRateLimits(
  db: Db,
  projectId: string,
  limits: Record<string, unknown> | null,
): Promise<boolean> {
  const result = await db
    .updateTable('projects')
    .set({ rate_limits: limits === null ? null : writeJson(limits) })
    .where('id', '=', projectId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

function toProjectRow(row: { id: string; name: string; created_at: number; rate_limits: unknown }): ProjectRow {
  return {
    id: row.id,
    name: row.name,
    createdAt: Number(row.created_at),
    rateLimits: row.rate_limits === null ? null : readJson<Record<string, unknown>>(row.rate_limits),
  };
}
