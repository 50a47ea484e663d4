import type { FastifyRequest } from 'fastify';
import type { Db } from '../db/database.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { verifyUserToken } from './identity.service.js';

/** The header carrying the user token of identity verification. */
export const USER_TOKEN_HEADER = 'x-service-user-token';

/** What identity checks need: the database and the box sealing signing keys (made on first use). */
export interface IdentityDeps {
  db: Db;
  secretBox: () => SecretBox;
}

/**
 * Returns a check for the client routes: a public-key request about `projectUserIds` must pass
 * the project's identity verification (when on); secret-key requests are trusted as they are.
 */
export function identityCheck(
  deps: IdentityDeps,
): (request: FastifyRequest, projectUserIds: string[]) => Promise<void> {
  return async (request, projectUserIds) => {
    if (request.auth?.kind !== 'public') return;
    const token = request.headers[USER_TOKEN_HEADER];
    await verifyUserToken(
      deps.db,
      deps.secretBox,
      request.auth.projectId,
      projectUserIds,
      typeof token === 'string' ? token.trim() : undefined,
      request.auth.identity,
    );
  };
}
