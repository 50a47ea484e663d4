import { Type } from '@sinclair/typebox';
import { MAX_IMPORT_PER_CALL } from './users-import.service.js';

export const IMPORT_DESCRIPTION =
  `Up to ${MAX_IMPORT_PER_CALL} users per call (more: 413 TOO_MANY_USERS), as NDJSON (\`content-type: application/x-ndjson\`, one \`{"project_user_id","properties"}\` per line) ` +
  'or a JSON array of the same objects. Each user is created, or its properties are merged into the stored ones as `POST /api/v1/users` does; ' +
  'each is written atomically and a bad line fails alone. The answer holds one result per input line (blank NDJSON lines are skipped; `line` counts from 1), ' +
  'in input order, and the totals. A line may carry `created_at` and `updated_at` (ISO 8601, as `herald users export` writes them): ' +
  'a new user gets them rather than the time of the import, so an export imports back as it was; an existing user keeps its `created_at` ' +
  'and takes the `updated_at`.';

const ImportItemExample = { project_user_id: 'user-42', properties: { plan: 'pro', score: 7 } };

const ImportArray = Type.Array(Type.Unknown(), {
  title: 'ImportUsersArray',
  description: 'A JSON array of `{ project_user_id, properties }` objects',
  examples: [[ImportItemExample, { project_user_id: 'user-43', properties: { plan: 'free' } }]],
});
const ImportNdjson = Type.String({
  title: 'ImportUsersNdjson',
  description: 'NDJSON: one `{ project_user_id, properties }` object per line',
  examples: [`${JSON.stringify(ImportItemExample)}\n{"project_user_id":"user-43","properties":{"plan":"free"}}\n`],
});

/** The body per content type (Fastify validates each against its own schema; OpenAPI lists both). */
export const ImportBody = {
  content: {
    'application/json': { schema: ImportArray },
    'application/x-ndjson': { schema: ImportNdjson },
  },
};

export const ImportResult = Type.Object(
  {
    line: Type.Integer({ minimum: 1 }),
    project_user_id: Type.Union([Type.String(), Type.Null()]),
    status: Type.Union([Type.Literal('created'), Type.Literal('updated'), Type.Literal('error')]),
    error: Type.Optional(Type.String()),
  },
  { title: 'ImportUserResult' },
);

export const ImportResponse = Type.Object(
  {
    results: Type.Array(ImportResult),
    created: Type.Integer(),
    updated: Type.Integer(),
    failed: Type.Integer(),
  },
  {
    title: 'ImportUsersResponse',
    examples: [
      {
        results: [
          { line: 1, project_user_id: 'user-42', status: 'updated' },
          { line: 2, project_user_id: 'user-43', status: 'created' },
          { line: 3, project_user_id: null, status: 'error', error: 'Line 3 is not valid JSON' },
        ],
        created: 1,
        updated: 1,
        failed: 1,
      },
    ],
  },
);
