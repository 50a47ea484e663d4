import { Value } from '@sinclair/typebox/value';
import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { findUser } from '../users/users.service.js';
import * as repo from './preferences.repository.js';
import { PutPreferencesBody } from './preferences.schemas.js';
import { listTopics, type Topic } from './topics.service.js';

export type { StoredPreferences, SubscriptionState } from './preferences.repository.js';

/** What a user chose, by internal user id (undefined: nothing, so every default applies). */
export const findStoredPreferences = repo.findPreferences;
type State = repo.SubscriptionState;

/** A user's preferences as the API shows them: every topic of the project with its effective state. */
export interface UserPreferences {
  projectUserId: string;
  campaignPushes: State;
  /** By topic key: the user's choice, else the topic's default. */
  topics: Record<string, State>;
  updatedAt: number | null;
}

/** What changed the preferences, told in the `preferences.updated` notice. */
export type PreferenceSource = 'api' | 'link' | 'import';

/**
 * The `preferences.updated` notice as this feature reports it. Structurally one of push's `Notice`s
 * (push owns the notice types and sits on this folder's floor, so the shape is restated here).
 */
export interface PreferencesNotice {
  type: 'preferences.updated';
  at: number;
  data: {
    project_id: string;
    project_user_id: string;
    campaign_pushes: State;
    topics: Record<string, State>;
    source: PreferenceSource;
  };
}

/** What a preference change needs: the database, the clock and, when webhooks are wired, the notice outbox. */
export interface PreferenceDeps {
  db: Db;
  clock: Clock;
  notices?: { emit(db: Db, projectId: string, notices: PreferencesNotice[]): Promise<void> } | undefined;
}

const stateOf = (defaultSubscribed: boolean): State => (defaultSubscribed ? 'subscribed' : 'unsubscribed');

/** Rule `subscription-topics`: a topic's state for a user is their choice, else the topic's default. */
export function effectiveTopicState(topic: Topic, chosen: Record<string, State> | undefined): State {
  return chosen?.[topic.topicId] ?? stateOf(topic.defaultSubscribed);
}

async function requireUser(db: Db, projectId: string, projectUserId: string) {
  const user = await findUser(db, projectId, projectUserId);
  if (!user) throw new AppError('not_found', 'USER_NOT_FOUND', `User ${projectUserId} does not exist`);
  return user;
}

/** The API's view of what a user chose: every topic of the project, their choice else its default. */
export function present(
  projectUserId: string,
  topics: Topic[],
  stored: repo.StoredPreferences | undefined,
): UserPreferences {
  return {
    projectUserId,
    campaignPushes: stored?.campaignPushes ?? 'subscribed',
    topics: Object.fromEntries(topics.map((t) => [t.key, effectiveTopicState(t, stored?.topics)])),
    updatedAt: stored?.updatedAt ?? null,
  };
}

export async function getPreferences(db: Db, projectId: string, projectUserId: string): Promise<UserPreferences> {
  const user = await requireUser(db, projectId, projectUserId);
  return present(projectUserId, await listTopics(db, projectId), await repo.findPreferences(db, user.id));
}

/**
 * Merges `input` (`campaign_pushes` and/or some topics by key) into the user's choices; an unknown
 * topic key is a 400 and nothing is written. Choices about topics deleted since are dropped on the
 * way, so a row holds at most one entry per topic of the project. The notice is queued in the
 * same transaction as the write.
 */
export async function updatePreferences(
  deps: PreferenceDeps,
  projectId: string,
  projectUserId: string,
  input: unknown,
  source: PreferenceSource = 'api',
): Promise<UserPreferences> {
  const first = Value.Errors(PutPreferencesBody, input).First();
  if (first)
    throw new AppError(
      'invalid',
      'INVALID_PREFERENCES',
      `${first.path === '' ? 'body' : first.path.slice(1).replaceAll('/', '.')}: ${first.message}`,
    );
  const body = input as PutPreferencesBody;
  const write = async (trx: Db) => {
    const user = await requireUser(trx, projectId, projectUserId);
    const topics = await listTopics(trx, projectId);
    const byKey = new Map(topics.map((t) => [t.key, t]));
    const unknown = Object.keys(body.topics ?? {}).filter((key) => !byKey.has(key));
    if (unknown.length > 0)
      throw new AppError(
        'invalid',
        'UNKNOWN_TOPIC',
        `topics: the project has no topic ${unknown
          .slice(0, 5)
          .map((k) => JSON.stringify(k))
          .join(', ')}`,
      );
    const current = await repo.findPreferences(trx, user.id);
    const live = new Set(topics.map((t) => t.topicId));
    const chosen = Object.fromEntries(Object.entries(current?.topics ?? {}).filter(([id]) => live.has(id)));
    for (const [key, state] of Object.entries(body.topics ?? {})) chosen[byKey.get(key)!.topicId] = state;
    const next: repo.StoredPreferences = {
      userId: user.id,
      campaignPushes: body.campaign_pushes ?? current?.campaignPushes ?? 'subscribed',
      topics: chosen,
      updatedAt: deps.clock.now(),
    };
    await repo.savePreferences(trx, projectId, next);
    const shown = present(projectUserId, topics, next);
    await deps.notices?.emit(trx, projectId, [
      {
        type: 'preferences.updated',
        at: next.updatedAt,
        data: {
          project_id: projectId,
          project_user_id: projectUserId,
          campaign_pushes: shown.campaignPushes,
          topics: shown.topics,
          source,
        },
      },
    ]);
    return shown;
  };
  return deps.db.isTransaction ? write(deps.db) : deps.db.transaction().execute(write);
}

export function preferencesToWire(p: UserPreferences) {
  return {
    project_user_id: p.projectUserId,
    campaign_pushes: p.campaignPushes,
    topics: p.topics,
    updated_at: p.updatedAt === null ? null : new Date(p.updatedAt).toISOString(),
  };
}
