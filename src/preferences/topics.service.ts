import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import * as repo from './topics.repository.js';
import { CreateTopicBody, PatchTopicBody, TOPICS_PER_PROJECT, isValidTopicKey } from './topics.schemas.js';

export type { Topic } from './topics.repository.js';
type Topic = repo.Topic;

export const topicNotFound = (key: string): AppError =>
  new AppError('not_found', 'TOPIC_NOT_FOUND', `Topic ${key} does not exist`);

/** Shape check shared by REST and the CLI (the CLI has no Fastify validation in front of it). */
function checkShape<T>(schema: TSchema, input: unknown): T {
  const first = Value.Errors(schema, input).First();
  if (first)
    throw new AppError(
      'invalid',
      'INVALID_TOPIC',
      `${first.path === '' ? 'body' : first.path.slice(1).replaceAll('/', '.')}: ${first.message}`,
    );
  return input as T;
}

/** Rule `subscription-topics`: a new topic of the project, at most `TOPICS_PER_PROJECT` of them. */
export async function createTopic(db: Db, clock: Clock, projectId: string, input: unknown): Promise<Topic> {
  const body = checkShape<CreateTopicBody>(CreateTopicBody, input);
  if ((await repo.countTopics(db, projectId)) >= TOPICS_PER_PROJECT)
    throw new AppError(
      'refused',
      'TOO_MANY_TOPICS',
      `A project holds at most ${TOPICS_PER_PROJECT} topics: delete one before creating another`,
    );
  const now = clock.now();
  const topic: Topic = {
    projectId,
    key: body.key,
    topicId: newId(),
    name: body.name,
    description: body.description ?? '',
    defaultSubscribed: body.default_subscribed ?? true,
    createdAt: now,
    updatedAt: now,
  };
  if (!(await repo.insertTopic(db, topic)))
    throw new AppError('conflict', 'TOPIC_EXISTS', `Topic ${body.key} already exists`);
  return topic;
}

export async function getTopic(db: Db, projectId: string, key: string): Promise<Topic> {
  const topic = isValidTopicKey(key) ? await repo.findTopic(db, projectId, key) : undefined;
  if (!topic) throw topicNotFound(key);
  return topic;
}

export const findTopic = repo.findTopic;
export const listTopics = repo.listTopics;

export async function updateTopic(
  db: Db,
  clock: Clock,
  projectId: string,
  key: string,
  input: unknown,
): Promise<Topic> {
  const patch = checkShape<PatchTopicBody>(PatchTopicBody, input ?? {});
  const current = await getTopic(db, projectId, key);
  const next: Topic = {
    ...current,
    ...(patch.name !== undefined && { name: patch.name }),
    ...(patch.description !== undefined && { description: patch.description }),
    ...(patch.default_subscribed !== undefined && { defaultSubscribed: patch.default_subscribed }),
    updatedAt: clock.now(),
  };
  await repo.updateTopic(db, next);
  return next;
}

/** Rule `subscription-topics`: a topic a campaign names cannot go (409, naming a few of them). */
export async function deleteTopic(db: Db, projectId: string, key: string): Promise<void> {
  await getTopic(db, projectId, key);
  const naming = await repo.campaignsNamingTopic(db, projectId, key, 5);
  if (naming.length > 0)
    throw new AppError(
      'conflict',
      'TOPIC_IN_USE',
      `Topic ${key} is the topic of campaign(s) ${naming.join(', ')}${naming.length === 5 ? ' and maybe more' : ''}: give them another topic or none first`,
    );
  if (!(await repo.deleteTopic(db, projectId, key))) throw topicNotFound(key);
}

/** Rule `subscription-topics`: a campaign's `topic` names an existing topic of its project. */
export async function requireTopic(db: Db, projectId: string, key: string, field = 'topic'): Promise<Topic> {
  const topic = isValidTopicKey(key) ? await repo.findTopic(db, projectId, key) : undefined;
  if (!topic)
    throw new AppError('invalid', 'UNKNOWN_TOPIC', `${field}: the project has no topic ${JSON.stringify(key)}`);
  return topic;
}

export function topicToWire(t: Topic) {
  return {
    key: t.key,
    name: t.name,
    description: t.description,
    default_subscribed: t.defaultSubscribed,
    created_at: new Date(t.createdAt).toISOString(),
    updated_at: new Date(t.updatedAt).toISOString(),
  };
}
