import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/database.js';
import type { WriteCommitter } from '../db/group-commit.js';
import { invalid } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { ImportBody, ImportResponse, IMPORT_DESCRIPTION } from './users-import.schemas.js';
import {
  assertImportSize,
  importUsers,
  parseNdjson,
  type ImportLine,
  type ImportPreferences,
} from './users-import.service.js';
import { ListUsersQuery, UserList } from './users-read.schemas.js';
import { listUsers, userToWire } from './users-read.service.js';

const config = { auth: 'secret', rateLimitClass: 'management' } as const;
const security = [{ projectId: [], apiKey: [] }];
const tags = ['users'];
const ErrorBody = Type.Object({ error: Type.String() });
const errorResponses = { 400: ErrorBody, 401: ErrorBody };

/** An import carries up to 10,000 users, more than the default body limit is sized for. */
export const IMPORT_BODY_LIMIT = 16 * 1024 * 1024;

export interface UserIoRouteDeps {
  db: Db;
  /** A replica (DATABASE_READ_URL) or `db`: only the user list reads it, a read that may lag. */
  readDb: Db;
  clock: Clock;
  writes: WriteCommitter;
  /** The preferences feature's part of an import line (it sits a floor above users). */
  preferences: ImportPreferences;
}

/** Listing users and bulk import: JSON `{"error"}` for every failure (`GET /users/{id}` is in src/profiles/). */
export function registerUserIoRoutes(fastify: FastifyInstance, deps: UserIoRouteDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { clock } = deps;

  app.get(
    '/api/v1/users',
    {
      config,
      schema: {
        operationId: 'listUsers',
        summary: 'List users, in project_user_id order',
        description:
          'Keyset pagination: pass `next_cursor` as `cursor` until it is null. `prefix` keeps ids that start with it; `filter` is a condition in the campaign segment language (property and event leaves, all/any/not), evaluated in the database. A bad cursor, limit or filter is a 400 naming the problem.',
        tags,
        security,
        querystring: ListUsersQuery,
        response: { 200: UserList, ...errorResponses },
      },
    },
    async (request) => {
      const page = await listUsers(deps.readDb, clock, request.auth!.projectId, request.query);
      return { users: page.users.map(userToWire), next_cursor: page.nextCursor };
    },
  );

  // NDJSON bodies are read as text by this route only (elsewhere JSON is the only body type).
  void fastify.register(async (scope) => {
    scope.addContentTypeParser('application/x-ndjson', { parseAs: 'string' }, (_request, body, done) => {
      done(null, typeof body === 'string' ? body : body.toString('utf8'));
    });
    scope.withTypeProvider<TypeBoxTypeProvider>().post(
      // `::` is a literal colon: the path is exactly /api/v1/users:import.
      '/api/v1/users::import',
      {
        config,
        bodyLimit: IMPORT_BODY_LIMIT,
        schema: {
          operationId: 'importUsers',
          summary: 'Create or update many users (path: /api/v1/users:import)',
          description: IMPORT_DESCRIPTION,
          tags,
          security,
          body: ImportBody,
          response: { 200: ImportResponse, ...errorResponses, 413: ErrorBody, 415: ErrorBody },
        },
      },
      async (request) => {
        const lines = importLines(request.body);
        return importUsers(deps, request.auth!.projectId, lines);
      },
    );
  });
}

/** The body's users as numbered lines: an NDJSON text, or a JSON array (line = 1-based index). */
function importLines(body: unknown): ImportLine[] {
  if (typeof body === 'string') {
    const lines = parseNdjson(body);
    assertImportSize(lines.length);
    return lines;
  }
  if (!Array.isArray(body))
    throw invalid('INVALID_IMPORT', 'The body must be NDJSON (application/x-ndjson) or a JSON array of users');
  assertImportSize(body.length);
  return body.map((value: unknown, i) => ({ line: i + 1, value }));
}
