import { Type } from '@sinclair/typebox';
import { Properties } from './users.schemas.js';

const Timestamp = Type.String({ format: 'date-time' });

export const UserSummary = Type.Object(
  {
    project_user_id: Type.String(),
    properties: Properties,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'UserSummary' },
);

export const UserList = Type.Object(
  { users: Type.Array(UserSummary), next_cursor: Type.Union([Type.String(), Type.Null()]) },
  {
    title: 'UserList',
    examples: [
      {
        users: [
          {
            project_user_id: 'user-42',
            properties: { plan: 'pro' },
            created_at: '2026-01-05T10:00:00.000Z',
            updated_at: '2026-01-06T09:30:00.000Z',
          },
        ],
        next_cursor: 'WyJ1c2VyLTQyIl0',
      },
    ],
  },
);

/** Query strings are not coerced (the app's ajv has `coerceTypes: false`), so numbers arrive as text. */
export const ListUsersQuery = Type.Object({
  limit: Type.Optional(Type.String({ pattern: '^([1-9][0-9]{0,2}|1000)$', description: '1 to 1000, default 50' })),
  cursor: Type.Optional(Type.String({ maxLength: 1024, description: 'next_cursor of the previous page' })),
  prefix: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Only ids starting with this' })),
  filter: Type.Optional(
    Type.String({
      maxLength: 16384,
      description:
        'A condition in the campaign segment language, as JSON (URL-encoded), e.g. {"property":"plan","op":"eq","value":"pro"}',
    }),
  ),
});
