import type { Db } from '../db/database.js';

export interface PreferenceLinkKeysTable {
  project_id: string;
  /** The HS256 key of the project's preference links, sealed (SecretBox) with the project id as associated data. */
  signing_key: string;
  created_at: number;
}

declare module '../db/database.js' {
  interface Database {
    preference_link_keys: PreferenceLinkKeysTable;
  }
}

export async function findLinkKey(db: Db, projectId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('preference_link_keys')
    .select('signing_key')
    .where('project_id', '=', projectId)
    .executeTakeFirst();
  return row?.signing_key;
}

/** Stores `sealed` unless the project has a key already (two first links at once keep one key). */
export async function insertLinkKey(db: Db, row: PreferenceLinkKeysTable): Promise<void> {
  await db
    .insertInto('preference_link_keys')
    .values(row)
    .onConflict((oc) => oc.column('project_id').doNothing())
    .execute();
}
