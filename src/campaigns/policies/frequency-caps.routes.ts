import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/database.js';
import { FrequencyCapsBody } from './frequency-caps.js';
import { getFrequencyCaps, setFrequencyCaps } from './frequency-caps.service.js';

const config = { auth: 'secret', rateLimitClass: 'management' } as const;
const security = [{ projectId: [], apiKey: [] }];
const tags = ['project'];
const ErrorBody = Type.Object({ error: Type.String() });
const RULES =
  'Up to 10 rules, all applying together (rule `frequency-caps`): `{"max": N, "per": "day" | "week" | {"minutes": M} | {"hours": H}, "tag"?}`. ' +
  "`day` and `week` (Monday to Sunday) are the user's calendar day and week in the user's time zone (the local-time settings' " +
  'zone property, else the default zone); minutes (up to 43,200) and hours (up to 720) are rolling windows. A rule with a ' +
  '`tag` applies to campaigns carrying it and counts only their sends. A campaign that is `critical` or has ' +
  '`respect_caps: false` ignores the caps; one with `counts_toward_caps: false` is not counted.';

/** The project's frequency caps (rule `frequency-caps`), read and replaced whole with the secret key. */
export function registerFrequencyCapRoutes(fastify: FastifyInstance, deps: { db: Db }): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/api/v1/project/frequency-caps',
    {
      config,
      schema: {
        operationId: 'getFrequencyCaps',
        summary: "The project's frequency caps",
        description: `The cap rules in force; \`{"rules": []}\` when there are none. ${RULES}`,
        tags,
        security,
        response: { 200: FrequencyCapsBody, 401: ErrorBody, 404: ErrorBody },
      },
    },
    async (request) => getFrequencyCaps(deps.db, request.auth!.projectId),
  );
  app.put(
    '/api/v1/project/frequency-caps',
    {
      config,
      schema: {
        operationId: 'setFrequencyCaps',
        summary: "Replace the project's frequency caps",
        description: `Replaces every rule (\`{"rules": []}\` removes them); sends already recorded keep counting. ${RULES}`,
        tags,
        security,
        body: FrequencyCapsBody,
        response: { 200: FrequencyCapsBody, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
      },
    },
    async (request) => setFrequencyCaps(deps.db, request.auth!.projectId, request.body),
  );
}
