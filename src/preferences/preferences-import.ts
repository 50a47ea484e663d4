import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import * as repo from './preferences.repository.js';
import type { PreferenceDeps, UserPreferences } from './preferences.service.js';
import { effectiveTopicState } from './preferences.service.js';
import { listTopics, type Topic } from './topics.service.js';

type State = repo.SubscriptionState;

/** A line's `preferences`, checked against the project's topics: what to write, by topic id. */
export interface ImportedPreferences {
  campaignPushes: State | undefined;
  topics: Record<string, State>;
  /** From the line (an export's `updated_at`), else the time of the import. */
  updatedAt: number | undefined;
}

const isState = (v: unknown): v is State => v === 'subscribed' || v === 'unsubscribed';
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
const bad = (message: string) => new AppError('invalid', 'INVALID_PREFERENCES', `preferences: ${message}`);

/**
 * Checks one line's `preferences` (the shape `GET /api/v1/users/{id}/preferences` answers, as an
 * export writes it): `campaign_pushes` and `topics` by key, each optional. Returns undefined when
 * the line says nothing to write: an export's `updated_at: null` is a user who never chose, so the
 * topics' defaults keep applying rather than being frozen as choices.
 */
export function checkImportedPreferences(
  value: unknown,
  projectUserId: string,
  topicsByKey: ReadonlyMap<string, Topic>,
): ImportedPreferences | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw bad('must be an object { campaign_pushes, topics }');
  const v = value as Record<string, unknown>;
  for (const key of Object.keys(v))
    if (!['project_user_id', 'campaign_pushes', 'topics', 'updated_at'].includes(key))
      throw bad(`unknown field ${JSON.stringify(key.slice(0, 64))}`);
  if (v.project_user_id !== undefined && v.project_user_id !== projectUserId)
    throw bad("project_user_id is not the line's project_user_id");
  if (v.campaign_pushes !== undefined && !isState(v.campaign_pushes))
    throw bad('campaign_pushes must be subscribed or unsubscribed');
  if (v.topics !== undefined && (typeof v.topics !== 'object' || v.topics === null || Array.isArray(v.topics)))
    throw bad('topics must be an object of topic key → subscribed or unsubscribed');
  const topics: Record<string, State> = {};
  const unknown: string[] = [];
  for (const [key, state] of Object.entries((v.topics ?? {}) as Record<string, unknown>)) {
    const topic = topicsByKey.get(key);
    if (!topic) unknown.push(key);
    else if (!isState(state)) throw bad(`topics.${key} must be subscribed or unsubscribed`);
    else topics[topic.topicId] = state;
  }
  if (unknown.length > 0)
    throw new AppError(
      'invalid',
      'UNKNOWN_TOPIC',
      `preferences.topics: the project has no topic ${unknown
        .slice(0, 5)
        .map((k) => JSON.stringify(k.slice(0, 64)))
        .join(', ')}`,
    );
  let updatedAt: number | undefined;
  if (v.updated_at === null) return undefined;
  if (v.updated_at !== undefined) {
    updatedAt = typeof v.updated_at === 'string' && DATE_TIME.test(v.updated_at) ? Date.parse(v.updated_at) : NaN;
    if (!Number.isFinite(updatedAt)) throw bad('updated_at must be an ISO 8601 date-time or null');
  }
  return { campaignPushes: v.campaign_pushes, topics, updatedAt };
}

const sameChoices = (a: repo.StoredPreferences, b: repo.StoredPreferences | undefined): boolean =>
  b !== undefined &&
  a.campaignPushes === b.campaignPushes &&
  Object.keys(a.topics).length === Object.keys(b.topics).length &&
  Object.entries(a.topics).every(([id, s]) => b.topics[id] === s);

/**
 * The `preferences` part of `POST /api/v1/users:import` and `herald users import` (the users
 * feature sits below this one and takes it as a dependency). `prepare` reads the project's topics
 * once per call, and only when a line carries preferences.
 */
export function preferencesImport(deps: Pick<PreferenceDeps, 'notices'>) {
  return {
    async prepare(db: Db, projectId: string) {
      const topics = await listTopics(db, projectId);
      const byKey = new Map(topics.map((t) => [t.key, t]));
      return {
        check: (value: unknown, projectUserId: string) => checkImportedPreferences(value, projectUserId, byKey),
        /**
         * Merges each user's imported choices into the stored ones as `PUT .../preferences` does, in
         * the import's transaction. A user whose choices would not change is not written and gets no
         * `preferences.updated` notice, so importing the same lines again changes nothing.
         */
        write: async (
          trx: Db,
          now: number,
          rows: { userId: string; projectUserId: string; preferences: ImportedPreferences }[],
        ) => {
          if (rows.length === 0) return;
          const stored = await repo.preferencesOfUsers(
            trx,
            rows.map((r) => r.userId),
          );
          const current = new Map(stored.map((p) => [p.userId, p]));
          const live = new Set(topics.map((t) => t.topicId));
          const notices = [];
          for (const { userId, projectUserId, preferences: p } of rows) {
            const stored = current.get(userId);
            const chosen = Object.fromEntries(Object.entries(stored?.topics ?? {}).filter(([id]) => live.has(id)));
            Object.assign(chosen, p.topics);
            const next: repo.StoredPreferences = {
              userId,
              campaignPushes: p.campaignPushes ?? stored?.campaignPushes ?? 'subscribed',
              topics: chosen,
              updatedAt: p.updatedAt ?? now,
            };
            if (sameChoices(next, stored)) continue;
            await repo.savePreferences(trx, projectId, next);
            const shown: UserPreferences['topics'] = Object.fromEntries(
              topics.map((t) => [t.key, effectiveTopicState(t, next.topics)]),
            );
            notices.push({
              type: 'preferences.updated' as const,
              at: now,
              data: {
                project_id: projectId,
                project_user_id: projectUserId,
                campaign_pushes: next.campaignPushes,
                topics: shown,
                source: 'import' as const,
              },
            });
          }
          if (notices.length > 0) await deps.notices?.emit(trx, projectId, notices);
        },
      };
    },
  };
}

export type PreferencesImport = ReturnType<typeof preferencesImport>;
