import type { Db } from '../db/database.js';

export interface TopicsTable {
  project_id: string;
  key: string;
  topic_id: string;
  name: string;
  description: string;
  default_subscribed: number;
  created_at: number;
  updated_at: number;
}

declare module '../db/database.js' {
  interface Database {
    topics: TopicsTable;
  }
}

export interface Topic {
  projectId: string;
  key: string;
  /** What users' choices name (a topic made again under an old key is a new topic). */
  topicId: string;
  name: string;
  description: string;
  defaultSubscribed: boolean;
  createdAt: number;
  updatedAt: number;
}

const toTopic = (r: TopicsTable): Topic => ({
  projectId: r.project_id,
  key: r.key,
  topicId: r.topic_id,
  name: r.name,
  description: r.description,
  defaultSubscribed: Number(r.default_subscribed) === 1,
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

const toRow = (t: Topic): TopicsTable => ({
  project_id: t.projectId,
  key: t.key,
  topic_id: t.topicId,
  name: t.name,
  description: t.description,
  default_subscribed: t.defaultSubscribed ? 1 : 0,
  created_at: t.createdAt,
  updated_at: t.updatedAt,
});

/** `false` when the project already has a topic with this key. */
export async function insertTopic(db: Db, topic: Topic): Promise<boolean> {
  const result = await db
    .insertInto('topics')
    .values(toRow(topic))
    .onConflict((oc) => oc.columns(['project_id', 'key']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function countTopics(db: Db, projectId: string): Promise<number> {
  const row = await db
    .selectFrom('topics')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('project_id', '=', projectId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function findTopic(db: Db, projectId: string, key: string): Promise<Topic | undefined> {
  const row = await db
    .selectFrom('topics')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('key', '=', key)
    .executeTakeFirst();
  return row && toTopic(row);
}

/** Every topic of the project (at most `TOPICS_PER_PROJECT`), by key. */
export async function listTopics(db: Db, projectId: string): Promise<Topic[]> {
  const rows = await db.selectFrom('topics').selectAll().where('project_id', '=', projectId).orderBy('key').execute();
  return rows.map(toTopic);
}

export async function updateTopic(db: Db, topic: Topic): Promise<void> {
  await db
    .updateTable('topics')
    .set({
      name: topic.name,
      description: topic.description,
      default_subscribed: topic.defaultSubscribed ? 1 : 0,
      updated_at: topic.updatedAt,
    })
    .where('project_id', '=', topic.projectId)
    .where('key', '=', topic.key)
    .execute();
}

export async function deleteTopic(db: Db, projectId: string, key: string): Promise<boolean> {
  const result = await db
    .deleteFrom('topics')
    .where('project_id', '=', projectId)
    .where('key', '=', key)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/**
 * A few campaigns that name the topic (on purpose this reads `campaigns`, a feature above this one:
 * the topic's deletion is refused while any does, and campaigns cannot be asked from down here).
 */
export async function campaignsNamingTopic(db: Db, projectId: string, key: string, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('campaigns')
    .select('campaign_id')
    .where('project_id', '=', projectId)
    .where('topic', '=', key)
    .orderBy('campaign_id')
    .limit(limit)
    .execute();
  return rows.map((r) => r.campaign_id);
}
