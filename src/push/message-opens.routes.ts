import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';
import { identityCheck, type IdentityDeps } from '../identity/identity.http.js';
import { identityVerificationOn } from '../identity/identity.service.js';
import { MessageOpenBody, MessageOpenResponse } from './push.schemas.js';
import { messageRecipient, openMessage, openToWire, type MessageOpenDeps } from './message-opens.service.js';

const security = [{ projectId: [], apiKey: [] }];
const ErrorBody = Type.Object({ error: Type.String() });

export type MessageOpenRouteDeps = MessageOpenDeps & IdentityDeps;

export function registerMessageOpenRoutes(fastify: FastifyInstance, deps: MessageOpenRouteDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const verifyIdentity = identityCheck(deps);

  app.post(
    '/api/v1/messages/:message_id(^[^/:]+)::open',
    {
      config: { auth: 'client', rateLimitClass: 'management' },
      // No body at all is an open of the notification itself, now: validated as `{}`.
      preValidation: (request, _reply, done) => {
        request.body ??= {};
        done();
      },
      schema: {
        operationId: 'openMessage',
        summary: 'Report that a message was opened (public or secret key)',
        description:
          "The app reports that its user opened a push or tapped one of its actions (`@herald/web`'s service worker does on `notificationclick`; FCM and APNs apps with the `herald_message_id` of the payload's data). The first report of a message is stored and counted (the trigger's `opened` counter, campaign analytics, the `message.opened` webhook event); a later one answers the stored open and counts nothing. `opened_at` defaults to now and is held between the send and now. With identity verification on, the public key needs X-Service-User-Token signed for the message's recipient. An unknown message id and another project's answer the same 404.",
        tags: ['push'],
        security,
        params: Type.Object({ message_id: Type.String({ minLength: 1, maxLength: 64 }) }),
        body: MessageOpenBody,
        response: { 200: MessageOpenResponse, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
      },
    },
    async (request) => {
      const projectId = request.auth!.projectId;
      const recipient = await messageRecipient(deps, deps.db, projectId, request.params.message_id);
      if (recipient.projectUserId !== null) await verifyIdentity(request, [recipient.projectUserId]);
      else if (
        request.auth!.kind === 'public' &&
        (await identityVerificationOn(deps.db, projectId, request.auth!.identity))
      )
        // No user to sign for (the device and ledger row are gone): only the secret key may report it.
        throw new AppError(
          'unauthenticated',
          'IDENTITY_VERIFICATION_FAILED',
          "This message's recipient is no longer known: report its open with the secret key",
        );
      return openToWire(await openMessage(deps, projectId, recipient, request.body));
    },
  );
}
