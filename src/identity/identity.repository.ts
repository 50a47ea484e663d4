import type { Db, IdentityVerificationTable } from '../db/database.js';
import { changeAwareCaches } from '../db/change-aware-cache.js';
import { freshReads } from '../lib/fresh-reads.js';

/**
 * Projects' settings as this process last read them (`null`: off), so a public-key registration or
 * event does not read the setting on every request (embedded database only,
 * src/db/change-aware-cache.ts): a setting turned on, here or by the CLI, applies from the next
 * request on, as without the cache.
 */
const settingCaches = changeAwareCaches<IdentityVerificationTable | null>(10_000);
const identitySettingsChanged = (): void => settingCaches.changed();

export function findSetting(db: Db, projectId: string): Promise<IdentityVerificationTable | undefined> {
  return db.selectFrom('identity_verification').selectAll().where('project_id', '=', projectId).executeTakeFirst();
}

const sharedReads = new WeakMap<object, (projectId: string) => Promise<IdentityVerificationTable | undefined>>();

/**
 * `findSetting` shared by the concurrent requests of one project on a handle without a cache
 * (PostgreSQL): each is answered by a read that began after it arrived (lib/fresh-reads.ts), so a
 * setting turned on before a request still applies to it.
 */
function findSettingShared(db: Db, projectId: string): Promise<IdentityVerificationTable | undefined> {
  let reads = sharedReads.get(db);
  if (!reads) sharedReads.set(db, (reads = freshReads((id: string) => findSetting(db, id))));
  return reads(projectId);
}

/**
 * `findSetting` through this process's cache where it has one (`settingCaches`), else through a
 * shared read outside transactions: the public-key hot path.
 */
export async function findSettingCached(db: Db, projectId: string): Promise<IdentityVerificationTable | undefined> {
  if (db.isTransaction) return findSetting(db, projectId);
  const cache = settingCaches.cacheOf(db);
  if (!cache) return findSettingShared(db, projectId);
  const cached = cache.get(projectId);
  if (cached !== undefined) return cached ?? undefined;
  const stamp = cache.stamp();
  const row = await findSetting(db, projectId);
  cache.set(projectId, row ?? null, stamp);
  return row;
}

/** Turns verification on, or replaces the signing key when it already is. */
export async function saveSetting(db: Db, row: IdentityVerificationTable): Promise<void> {
  identitySettingsChanged();
  await db
    .insertInto('identity_verification')
    .values(row)
    .onConflict((oc) =>
      oc.column('project_id').doUpdateSet({ signing_key: row.signing_key, created_at: row.created_at }),
    )
    .execute();
  identitySettingsChanged();
}

export async function deleteSetting(db: Db, projectId: string): Promise<boolean> {
  identitySettingsChanged();
  const result = await db.deleteFrom('identity_verification').where('project_id', '=', projectId).executeTakeFirst();
  identitySettingsChanged();
  return Number(result.numDeletedRows) > 0;
}
