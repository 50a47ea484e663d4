import { Type, type Static } from '@sinclair/typebox';
import { TOPICS_PER_PROJECT } from './topics.schemas.js';

const State = Type.Union([Type.Literal('subscribed'), Type.Literal('unsubscribed')]);

export const PutPreferencesBody = Type.Object(
  {
    campaign_pushes: Type.Optional(
      Type.Union([Type.Literal('subscribed'), Type.Literal('unsubscribed')], {
        description: '`unsubscribed`: no campaign push reaches the user, whatever its topic (direct sends still do)',
      }),
    ),
    topics: Type.Optional(
      Type.Record(Type.String({ maxLength: 64 }), State, {
        maxProperties: TOPICS_PER_PROJECT,
        description: 'Topic key → state; merged into the stored choices (topics not named keep theirs)',
      }),
    ),
  },
  {
    additionalProperties: false,
    title: 'UpdatePreferencesRequest',
    examples: [
      { topics: { promotions: 'unsubscribed' } },
      { campaign_pushes: 'unsubscribed' },
      { campaign_pushes: 'subscribed', topics: { promotions: 'subscribed', 'product-news': 'subscribed' } },
    ],
  },
);
export type PutPreferencesBody = Static<typeof PutPreferencesBody>;

export const PreferencesResponse = Type.Object(
  {
    project_user_id: Type.String(),
    campaign_pushes: State,
    topics: Type.Record(Type.String(), State, {
      description: "Every topic of the project with the user's state: their choice, else the topic's default",
    }),
    updated_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When the user last changed a choice; null when they never did',
    }),
  },
  {
    title: 'UserPreferences',
    examples: [
      {
        project_user_id: 'user-42',
        campaign_pushes: 'subscribed',
        topics: { promotions: 'unsubscribed', 'product-news': 'subscribed' },
        updated_at: '2026-01-15T09:30:00.000Z',
      },
    ],
  },
);

export const PreferenceLinkBody = Type.Object(
  {
    expires_in: Type.Optional(
      Type.Integer({
        minimum: 60,
        maximum: 30 * 86_400,
        description: 'Seconds the link stays valid: 60 to 2,592,000 (30 days), default 604,800 (7 days)',
      }),
    ),
  },
  { additionalProperties: false, title: 'PreferenceLinkRequest', examples: [{ expires_in: 86_400 }] },
);

export const PreferenceLinkResponse = Type.Object(
  { url: Type.String(), expires_at: Type.String({ format: 'date-time' }) },
  {
    title: 'PreferenceLink',
    examples: [
      {
        url: 'https://herald.example.com/preferences?token=eyJhbGciOiJIUzI1NiJ9...',
        expires_at: '2026-01-22T09:30:00.000Z',
      },
    ],
  },
);
