import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/database.js';
import { jsonKeyText } from '../db/dialect.js';
import { preferencesOfUsers, type StoredPreferences } from './preferences.repository.js';
import { effectiveTopicState } from './preferences.service.js';
import { findTopic, type Topic } from './topics.service.js';

/** What a campaign's send asks of the gate. */
export interface SubscriptionGate {
  /** The campaign's topic key, or null/undefined for none. */
  topic?: string | null | undefined;
  /**
   * Skip the topic check (a campaign that must reach people whatever their topics, such as a
   * critical one); the global `campaign_pushes` opt-out still applies.
   */
  bypassTopics?: boolean | undefined;
}

/**
 * Rule `subscription-topics`, at send time: of `userIds` (ids of one fan-out slice), those who get
 * no campaign push: globally opted out, or not subscribed to the campaign's topic (their choice,
 * else the topic's default). One query per thousand users on the preferences' primary key, and
 * one for the topic; a topic deleted since the trigger was made gates nothing.
 */
export async function unsubscribedUsers(
  db: Db,
  projectId: string,
  userIds: readonly string[],
  gate: SubscriptionGate,
): Promise<Set<string>> {
  const out = new Set<string>();
  if (userIds.length === 0) return out;
  const topic = gate.topic && !gate.bypassTopics ? await findTopic(db, projectId, gate.topic) : undefined;
  const stored = new Map((await preferencesOfUsers(db, userIds)).map((p) => [p.userId, p]));
  for (const id of userIds) if (unsubscribedBy(stored.get(id), topic) !== undefined) out.add(id);
  return out;
}

/**
 * The same gate as SQL over `users.id` (a dry run counts a whole broadcast in the database): true
 * for a user who gets no campaign push, globally opted out or not subscribed to the topic (their
 * choice, else its default). One probe of `user_preferences`' primary key per user.
 */
export async function unsubscribedCondition(
  db: Db,
  projectId: string,
  gate: SubscriptionGate,
): Promise<RawBuilder<boolean>> {
  const topic = gate.topic && !gate.bypassTopics ? await findTopic(db, projectId, gate.topic) : undefined;
  const prefs = sql`select 1 from user_preferences p where p.user_id = users.id`;
  if (!topic) return sql<boolean>`exists (${prefs} and p.campaign_pushes = 'unsubscribed')`;
  const choice = jsonKeyText(db, 'p.topics', topic.topicId);
  return topic.defaultSubscribed
    ? sql<boolean>`exists (${prefs} and (p.campaign_pushes = 'unsubscribed' or ${choice} = 'unsubscribed'))`
    : sql<boolean>`not exists (${prefs} and p.campaign_pushes = 'subscribed' and ${choice} = 'subscribed')`;
}

/**
 * Why one user gets no campaign push (rule `subscription-topics`): opted out of campaign pushes
 * altogether, or not subscribed to the campaign's topic (`topic` undefined: none applies); undefined
 * when they get it. The per-user step of the batch's gate, and of the eligibility explanation.
 */
export function unsubscribedBy(
  stored: Pick<StoredPreferences, 'campaignPushes' | 'topics'> | undefined,
  topic: Topic | undefined,
): 'campaign_pushes' | 'topic' | undefined {
  if (stored?.campaignPushes === 'unsubscribed') return 'campaign_pushes';
  if (topic && effectiveTopicState(topic, stored?.topics) === 'unsubscribed') return 'topic';
  return undefined;
}
