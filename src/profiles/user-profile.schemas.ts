import { Type } from '@sinclair/typebox';
import { UserSummary } from '../users/users-read.schemas.js';

const Timestamp = Type.String({ format: 'date-time' });

/** A device as a tenant reads it back: the push token, Web Push endpoint and keys are never shown. */
export const UserDevice = Type.Object(
  {
    device_id: Type.String(),
    project_user_id: Type.String(),
    platform: Type.String({ description: 'android, ios or web' }),
    provider: Type.String({ description: 'fcm, apns or webpush' }),
    status: Type.String({ description: 'active or disabled' }),
    disabled_reason: Type.Union([Type.String(), Type.Null()]),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'UserDevice' },
);

export const UserEvent = Type.Object(
  {
    event_id: Type.String(),
    name: Type.String(),
    properties: Type.Record(Type.String(), Type.Unknown()),
    timestamp: Type.String({ format: 'date-time', description: 'When the event happened (as tracked)' }),
  },
  { title: 'UserEvent' },
);

export const UserDetail = Type.Object(
  {
    ...UserSummary.properties,
    devices: Type.Array(UserDevice),
    recent_events: Type.Array(UserEvent, { description: 'The latest 20 events, newest first' }),
  },
  {
    title: 'UserDetail',
    examples: [
      {
        project_user_id: 'user-42',
        properties: { plan: 'pro' },
        created_at: '2026-01-05T10:00:00.000Z',
        updated_at: '2026-01-06T09:30:00.000Z',
        devices: [
          {
            device_id: 'phone-1',
            project_user_id: 'user-42',
            platform: 'android',
            provider: 'fcm',
            status: 'active',
            disabled_reason: null,
            created_at: '2026-01-05T10:01:00.000Z',
            updated_at: '2026-01-05T10:01:00.000Z',
          },
        ],
        recent_events: [
          {
            event_id: '5f0c7f3e-2b8a-4d4e-9a51-3c2e8f7d9b10',
            name: 'purchase',
            properties: { amount: 30 },
            timestamp: '2026-01-06T09:29:58.000Z',
          },
        ],
      },
    ],
  },
);
