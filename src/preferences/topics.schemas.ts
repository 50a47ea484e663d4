import { Type, type Static } from '@sinclair/typebox';

/** Topic keys: a slug (lower-case letters, digits, `-`, `_`), safe in a path and in a URL form field. */
export const TOPIC_KEY_PATTERN = '^[a-z0-9][a-z0-9_-]{0,63}$';
const topicKeyRegExp = new RegExp(TOPIC_KEY_PATTERN);
export const isValidTopicKey = (value: unknown): value is string =>
  typeof value === 'string' && topicKeyRegExp.test(value);

/** Rule `subscription-topics`: a project holds at most this many topics. */
export const TOPICS_PER_PROJECT = 100;

const fields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.String({ maxLength: 1000 }),
  default_subscribed: Type.Boolean({
    description:
      'true: users are subscribed unless they opted out (opt-out topic); false: only users who opted in are (opt-in topic)',
  }),
};

export const CreateTopicBody = Type.Object(
  {
    key: Type.String({
      pattern: TOPIC_KEY_PATTERN,
      description: 'Unique in the project; a slug of up to 64 characters',
    }),
    name: fields.name,
    description: Type.Optional(fields.description),
    default_subscribed: Type.Optional(fields.default_subscribed),
  },
  {
    additionalProperties: false,
    title: 'CreateTopicRequest',
    examples: [
      { key: 'promotions', name: 'Promotions', description: 'Sales and offers', default_subscribed: true },
      { key: 'product-news', name: 'Product news', default_subscribed: false },
    ],
  },
);
export type CreateTopicBody = Static<typeof CreateTopicBody>;

export const PatchTopicBody = Type.Partial(Type.Object(fields), {
  additionalProperties: false,
  title: 'UpdateTopicRequest',
  examples: [{ default_subscribed: false }],
});
export type PatchTopicBody = Static<typeof PatchTopicBody>;

const topicExample = {
  key: 'promotions',
  name: 'Promotions',
  description: 'Sales and offers',
  default_subscribed: true,
  created_at: '2026-01-15T09:30:00.000Z',
  updated_at: '2026-01-15T09:30:00.000Z',
};

export const TopicResponse = Type.Object(
  {
    key: Type.String(),
    name: Type.String(),
    description: Type.String(),
    default_subscribed: Type.Boolean(),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { title: 'Topic', examples: [topicExample] },
);

export const TopicList = Type.Object(
  { topics: Type.Array(TopicResponse) },
  { title: 'TopicList', examples: [{ topics: [topicExample] }] },
);

export const TopicParams = Type.Object({ key: Type.String({ maxLength: 64 }) });
