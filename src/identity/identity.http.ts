import type { FastifyRequest } from 'fastify';
import type { AppDeps } from '../app.js';
import { createSecretBox, resolveSecretKey, type SecretBox } from '../push/credentials/secret-box.js';
import { verifyUserToken } from './identity.service.js';

/** The header carrying the user token of identity verification. */
export const USER_TOKEN_HEADER = 'x-service-user-token';

/** The box sealing signing keys: the push runtime's when there is one (same key), else made on first use. */
export function identitySecretBox(deps: AppDeps): () => SecretBox {
  let box: SecretBox | undefined;
  return () => (box ??= deps.push?.secretBox() ?? createSecretBox(resolveSecretKey(deps.config, deps.dialect)));
}

/**
 * Returns a check for the client routes: a public-key request about `projectUserIds` must pass
 * the project's identity verification (when on); secret-key requests are trusted as they are.
 */
export function identityCheck(deps: AppDeps): (request: FastifyRequest, projectUserIds: string[]) => Promise<void> {
  const secretBox = identitySecretBox(deps);
  return async (request, projectUserIds) => {
    if (request.auth?.kind !== 'public') return;
    const token = request.headers[USER_TOKEN_HEADER];
    await verifyUserToken(
      deps.db,
      secretBox,
      request.auth.projectId,
      projectUserIds,
      typeof token === 'string' ? token.trim() : undefined,
    );
  };
}
