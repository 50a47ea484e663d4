import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import { authenticateKey } from '../projects/projects.service.js';

const unauthenticated = (message: string): AppError => new AppError('unauthenticated', 'UNAUTHENTICATED', message);

/**
 * REST authentication (rule `key-kinds`): `X-Service-Project-ID` and `X-Service-API-Key` must name a live key of
 * that project; routes marked `auth: 'secret'` refuse public keys. Every failure is a 401.
 */
export function registerRestAuth(app: FastifyInstance, db: Db): void {
  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const mode = request.routeOptions.config.auth ?? 'none';
    if (mode === 'none' || mode === 'preference-link') return;
    const projectId = header(request, 'x-service-project-id');
    const key = header(request, 'x-service-api-key');
    if (!projectId || !key) throw unauthenticated('X-Service-Project-ID and X-Service-API-Key headers are required');
    const found = await authenticateKey(db, key);
    if (!found || found.projectId !== projectId) throw unauthenticated('Invalid API key or project id');
    if (mode === 'secret' && found.kind !== 'secret') throw unauthenticated('This operation requires a secret API key');
    request.auth = found;
  });
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}
