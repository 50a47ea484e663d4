import type { Db, JsonColumn } from '../db/database.js';
import { readJson, writeJson } from '../db/json.js';

export type SubscriptionState = 'subscribed' | 'unsubscribed';

export interface UserPreferencesTable {
  user_id: string;
  project_id: string;
  campaign_pushes: SubscriptionState;
  /** Topic id → state; only the topics the user chose. */
  topics: JsonColumn;
  updated_at: number;
}

declare module '../db/database.js' {
  interface Database {
    user_preferences: UserPreferencesTable;
  }
}

/** What a user chose (absent row: nothing, so every default applies). */
export interface StoredPreferences {
  userId: string;
  campaignPushes: SubscriptionState;
  /** By topic id. */
  topics: Record<string, SubscriptionState>;
  updatedAt: number;
}

const toStored = (r: Pick<UserPreferencesTable, 'user_id' | 'campaign_pushes' | 'topics' | 'updated_at'>) => ({
  userId: r.user_id,
  campaignPushes: r.campaign_pushes,
  topics: readJson<Record<string, SubscriptionState>>(r.topics),
  updatedAt: Number(r.updated_at),
});

export async function findPreferences(db: Db, userId: string): Promise<StoredPreferences | undefined> {
  const row = await db.selectFrom('user_preferences').selectAll().where('user_id', '=', userId).executeTakeFirst();
  return row && toStored(row);
}

/** Keeps each `in (...)` list well under both databases' bound-parameter limits. */
const IDS_PER_QUERY = 1000;

/** The choices of many users (a fan-out slice): one query per thousand users, on the primary key. */
export async function preferencesOfUsers(db: Db, userIds: readonly string[]): Promise<StoredPreferences[]> {
  const out: StoredPreferences[] = [];
  for (let i = 0; i < userIds.length; i += IDS_PER_QUERY) {
    const rows = await db
      .selectFrom('user_preferences')
      .select(['user_id', 'campaign_pushes', 'topics', 'updated_at'])
      .where('user_id', 'in', userIds.slice(i, i + IDS_PER_QUERY))
      .execute();
    for (const r of rows) out.push(toStored(r));
  }
  return out;
}

export async function savePreferences(db: Db, projectId: string, p: StoredPreferences): Promise<void> {
  const row = {
    user_id: p.userId,
    project_id: projectId,
    campaign_pushes: p.campaignPushes,
    topics: writeJson(p.topics),
    updated_at: p.updatedAt,
  };
  await db
    .insertInto('user_preferences')
    .values(row)
    .onConflict((oc) =>
      oc.column('user_id').doUpdateSet({
        campaign_pushes: row.campaign_pushes,
        topics: row.topics,
        updated_at: row.updated_at,
      }),
    )
    .execute();
}
