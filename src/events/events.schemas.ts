import { Type, type Static } from '@sinclair/typebox';
import { Properties, ProjectUserId } from '../users/users.schemas.js';

export const MAX_EVENTS_PER_REQUEST = 500;

export const EVENT_NAME_PATTERN = '^[^\\u0000-\\u001F\\u007F\\uD800-\\uDFFF]+$';
export const EventName = Type.String({ minLength: 1, maxLength: 255, pattern: EVENT_NAME_PATTERN });
/** ISO 8601 date-time, or epoch milliseconds. */
export const EventTimestamp = Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Number()]);

export const EventInput = Type.Object(
  {
    project_user_id: ProjectUserId,
    name: EventName,
    properties: Type.Optional(Properties),
    timestamp: Type.Optional(EventTimestamp),
  },
  { additionalProperties: false },
);
export type EventInput = Static<typeof EventInput>;

export const TrackEventsBody = Type.Union(
  [
    EventInput,
    Type.Object(
      { events: Type.Array(EventInput, { minItems: 1, maxItems: MAX_EVENTS_PER_REQUEST }) },
      { additionalProperties: false },
    ),
  ],
  {
    title: 'TrackEventsRequest',
    examples: [
      {
        project_user_id: 'user-42',
        name: 'order_completed',
        properties: { total: 42.5, currency: 'EUR' },
        timestamp: '2026-01-15T09:30:00Z',
      },
    ],
  },
);
