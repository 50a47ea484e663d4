import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import { CreateTopicBody, PatchTopicBody, TopicList, TopicParams, TopicResponse } from './topics.schemas.js';
import * as topics from './topics.service.js';

const routeConfig = { auth: 'secret', rateLimitClass: 'management' } as const;
const security = [{ projectId: [], apiKey: [] }];
const tags = ['topics'];
const ErrorBody = Type.Object({ error: Type.String() });
const errors = { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody };

/** Subscription topics (rule `subscription-topics`), managed with the secret key. */
export function registerTopicRoutes(fastify: FastifyInstance, deps: { db: Db; clock: Clock }): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, clock } = deps;

  app.post(
    '/api/v1/topics',
    {
      config: routeConfig,
      schema: {
        operationId: 'createTopic',
        summary: 'Create a subscription topic',
        description:
          'A topic campaigns can name; users subscribe to it or unsubscribe from it in their preferences. `default_subscribed` (default true) is the state of a user who never chose. A project holds at most 100 topics; a key that exists is a 409.',
        tags,
        security,
        body: CreateTopicBody,
        response: { 201: TopicResponse, 409: ErrorBody, ...errors },
      },
    },
    async (request, reply) => {
      const topic = await topics.createTopic(db, clock, request.auth!.projectId, request.body);
      return reply.code(201).send(topics.topicToWire(topic));
    },
  );

  app.get(
    '/api/v1/topics',
    {
      config: routeConfig,
      schema: {
        operationId: 'listTopics',
        summary: 'List the subscription topics',
        description: 'Every topic of the project (at most 100), by key.',
        tags,
        security,
        response: { 200: TopicList, ...errors },
      },
    },
    async (request) => ({ topics: (await topics.listTopics(db, request.auth!.projectId)).map(topics.topicToWire) }),
  );

  app.get(
    '/api/v1/topics/:key',
    {
      config: routeConfig,
      schema: {
        operationId: 'getTopic',
        summary: 'Get a subscription topic',
        description: 'The topic with its default state for users who never chose.',
        tags,
        security,
        params: TopicParams,
        response: { 200: TopicResponse, ...errors },
      },
    },
    async (request) => topics.topicToWire(await topics.getTopic(db, request.auth!.projectId, request.params.key)),
  );

  app.patch(
    '/api/v1/topics/:key',
    {
      config: routeConfig,
      schema: {
        operationId: 'updateTopic',
        summary: 'Change a subscription topic',
        description:
          'Changes the given fields (the key stays). Changing `default_subscribed` changes the state of every user who never chose, from the next fan-out on.',
        tags,
        security,
        params: TopicParams,
        body: PatchTopicBody,
        response: { 200: TopicResponse, ...errors },
      },
    },
    async (request) =>
      topics.topicToWire(
        await topics.updateTopic(db, clock, request.auth!.projectId, request.params.key, request.body),
      ),
  );

  app.delete(
    '/api/v1/topics/:key',
    {
      config: routeConfig,
      schema: {
        operationId: 'deleteTopic',
        summary: 'Delete a subscription topic',
        description:
          "Deletes the topic and, with it, every user's choice about it. A topic a campaign names is a 409: give the campaign another topic, or none, first.",
        tags,
        security,
        params: TopicParams,
        response: { 200: Type.Object({}), 409: ErrorBody, ...errors },
      },
    },
    async (request) => {
      await topics.deleteTopic(db, request.auth!.projectId, request.params.key);
      return {};
    },
  );
}
