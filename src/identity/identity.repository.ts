import type { Db } from '../db/database.js';

export interface IdentityVerificationTable {
  project_id: string;
  /** The signing key, sealed (SecretBox) with the project id as associated data. */
  signing_key: string;
  created_at: number;
}

declare module '../db/database.js' {
  interface Database {
    identity_verification: IdentityVerificationTable;
  }
}

export function findSetting(db: Db, projectId: string): Promise<IdentityVerificationTable | undefined> {
  return db.selectFrom('identity_verification').selectAll().where('project_id', '=', projectId).executeTakeFirst();
}

/** Turns verification on, or replaces the signing key when it already is. */
export async function saveSetting(db: Db, row: IdentityVerificationTable): Promise<void> {
  await db
    .insertInto('identity_verification')
    .values(row)
    .onConflict((oc) =>
      oc.column('project_id').doUpdateSet({ signing_key: row.signing_key, created_at: row.created_at }),
    )
    .execute();
}

export async function deleteSetting(db: Db, projectId: string): Promise<boolean> {
  const result = await db.deleteFrom('identity_verification').where('project_id', '=', projectId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
