import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { invalid } from '../../errors.js';
import type { PushRouteDeps } from '../push.routes.js';
import type { Provider } from '../push.types.js';
import { defaultVapidSubject } from './credential-inputs.js';
import { tokenUriRulesOf } from './token-uri-policy.js';
import {
  describeCredentials,
  removeCredentials,
  setApnsCredentials,
  setFcmCredentials,
  setWebPushCredentials,
  webPushPublicKey,
} from './credentials.service.js';

const security = [{ projectId: [], apiKey: [] }];
const config = { auth: 'secret', rateLimitClass: 'management' } as const;
const ErrorBody = Type.Object({ error: Type.String() }, { title: 'Error' });
const Problem = Type.Union(
  [
    Type.Object({
      reason: Type.String({
        description: "The provider's code (SENDER_ID_MISMATCH, DeviceTokenNotForTopic, VAPID_REJECTED_403, ...)",
      }),
      at: Type.String(),
      deliveries: Type.Integer({
        description: 'Deliveries that met a configuration error since the credentials were saved',
      }),
    }),
    Type.Null(),
  ],
  {
    description:
      'The last configuration error a provider reported for these credentials; cleared by saving them again. Devices are not disabled for such errors.',
  },
);
const Stamp = { updated_at: Type.String(), problem: Problem };

export const CredentialsView = Type.Object(
  {
    fcm: Type.Union([
      Type.Object({
        project_id: Type.String(),
        client_email: Type.String(),
        private_key_id: Type.Union([Type.String(), Type.Null()]),
        token_uri: Type.String(),
        ...Stamp,
      }),
      Type.Null(),
    ]),
    apns: Type.Union([
      Type.Object({
        key_id: Type.String(),
        team_id: Type.String(),
        topic: Type.String(),
        sandbox: Type.Boolean(),
        ...Stamp,
      }),
      Type.Null(),
    ]),
    webpush: Type.Union([Type.Object({ public_key: Type.String(), subject: Type.String(), ...Stamp }), Type.Null()]),
    warning: Type.Optional(
      Type.String({
        description: 'Present when this save changed the VAPID key pair: existing browser subscriptions stop working',
      }),
    ),
  },
  {
    title: 'PushCredentials',
    examples: [
      {
        fcm: null,
        apns: null,
        webpush: {
          public_key: 'BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM',
          subject: 'mailto:ops@example.com',
          updated_at: '2026-01-15T09:30:00.000Z',
          problem: null,
        },
      },
    ],
  },
);

const FcmBody = Type.Object(
  { service_account: Type.Record(Type.String(), Type.Unknown(), { description: 'The Firebase service account JSON' }) },
  {
    additionalProperties: false,
    title: 'SetFcmCredentialsRequest',
    examples: [
      {
        service_account: {
          type: 'service_account',
          project_id: 'my-firebase-project',
          private_key_id: '5f1c...',
          private_key: '-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----\n',
          client_email: 'herald@my-firebase-project.iam.gserviceaccount.com',
          token_uri: 'https://oauth2.googleapis.com/token',
        },
      },
    ],
  },
);
const ApnsBody = Type.Object(
  {
    key: Type.String({ minLength: 1, maxLength: 8192, description: 'Contents of the AuthKey_XXXXXXXXXX.p8 file' }),
    key_id: Type.String(),
    team_id: Type.String(),
    topic: Type.String({ description: 'The app bundle id' }),
    sandbox: Type.Optional(Type.Boolean({ description: 'Send to the APNs development environment' })),
  },
  {
    additionalProperties: false,
    title: 'SetApnsCredentialsRequest',
    examples: [
      {
        key: '-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----',
        key_id: 'ABC123DEFG',
        team_id: 'DEF123GHIJ',
        topic: 'com.example.app',
        sandbox: false,
      },
    ],
  },
);
const WebPushBody = Type.Object(
  {
    public_key: Type.Optional(Type.String()),
    private_key: Type.Optional(Type.String()),
    subject: Type.Optional(
      Type.String({
        description:
          'mailto: address or https URL the push services may contact (required unless VAPID_SUBJECT is set)',
      }),
    ),
    rotate: Type.Optional(
      Type.Boolean({
        description:
          'Generate a new key pair although the project has one: existing browser subscriptions stop working',
      }),
    ),
  },
  {
    additionalProperties: false,
    title: 'SetWebPushCredentialsRequest',
    description:
      'Without keys, a VAPID key pair is generated on a project without one; a project that has keys answers 409 unless `rotate` is true',
    examples: [{ subject: 'mailto:ops@example.com' }],
  },
);

/**
 * Provider credentials per project: `PUT /api/v1/push-credentials/{fcm|apns|webpush}` stores them
 * (secrets sealed at rest), `GET /api/v1/push-credentials` shows what is configured without any
 * private key, `DELETE .../{provider}` removes one. Secret key only.
 */
export function registerPushCredentialRoutes(fastify: FastifyInstance, deps: PushRouteDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, clock, push } = deps;
  const box = () => push.secretBox();
  const response = {
    200: CredentialsView,
    400: Type.Object({ error: Type.String() }),
    401: Type.Object({ error: Type.String() }),
    409: Type.Object({ error: Type.String() }),
  };

  app.get(
    '/api/v1/push-credentials',
    {
      config,
      schema: {
        operationId: 'getPushCredentials',
        summary: 'Which push providers are configured (redacted)',
        description:
          "Each provider's public settings, when they were saved and the last configuration error a provider reported; private keys are never shown.",
        tags: ['push'],
        security,
        response: { 200: CredentialsView },
      },
    },
    async (request) => describeCredentials(db, request.auth!.projectId),
  );

  app.get(
    '/api/v1/push-credentials/webpush/public-key',
    {
      // The client class: a web app reads it with the public key to subscribe a browser. A project-level
      // read, so identity verification (about one user) does not apply.
      config: { auth: 'client', rateLimitClass: 'management' },
      schema: {
        operationId: 'getWebPushPublicKey',
        summary: "The project's VAPID public key (public or secret key)",
        description:
          'What a browser passes as `applicationServerKey` to `PushManager.subscribe()`. Readable with the public key, so web apps can fetch it; 404 when the project has no Web Push credentials.',
        tags: ['push'],
        security,
        response: {
          200: Type.Object(
            { public_key: Type.String({ description: 'Uncompressed P-256 public key, base64url' }) },
            { title: 'WebPushPublicKey', examples: [{ public_key: 'BNc...R7w' }] },
          ),
          401: ErrorBody,
          404: ErrorBody,
        },
      },
    },
    async (request) => ({ public_key: await webPushPublicKey(db, request.auth!.projectId) }),
  );

  app.put(
    '/api/v1/push-credentials/fcm',
    {
      config,
      schema: {
        operationId: 'setFcmCredentials',
        summary: 'Set the FCM service account',
        description:
          "Stores the Firebase service account (its private key sealed at rest) that sends to Android and FCM-registered devices. Its `token_uri` must be Google's.",
        tags: ['push'],
        security,
        body: FcmBody,
        response,
      },
    },
    async (request) => {
      const view = await setFcmCredentials(
        db,
        box,
        clock,
        request.auth!.projectId,
        request.body.service_account,
        tokenUriRulesOf(push.config),
      );
      push.forgetCredentials(request.auth!.projectId);
      return view;
    },
  );

  app.put(
    '/api/v1/push-credentials/apns',
    {
      config,
      schema: {
        operationId: 'setApnsCredentials',
        summary: 'Set the APNs auth key',
        description: 'Stores the APNs token-based auth key (.p8, sealed at rest) that sends to iOS devices of `topic`.',
        tags: ['push'],
        security,
        body: ApnsBody,
        response,
      },
    },
    async (request) => {
      const b = request.body;
      const view = await setApnsCredentials(db, box, clock, request.auth!.projectId, {
        key: b.key,
        keyId: b.key_id,
        teamId: b.team_id,
        topic: b.topic,
        sandbox: b.sandbox,
      });
      push.forgetCredentials(request.auth!.projectId);
      return view;
    },
  );

  app.put(
    '/api/v1/push-credentials/webpush',
    {
      config,
      schema: {
        operationId: 'setWebPushCredentials',
        summary: 'Set (or generate) the VAPID keys',
        description:
          'Stores a VAPID key pair, or generates one. Changing the pair (`rotate`) makes existing browser subscriptions stop working; the answer then carries a `warning`.',
        tags: ['push'],
        security,
        body: WebPushBody,
        response,
      },
    },
    async (request) => {
      const b = request.body;
      const input = { publicKey: b.public_key, privateKey: b.private_key, subject: b.subject, rotate: b.rotate };
      const view = await setWebPushCredentials(
        db,
        box,
        clock,
        request.auth!.projectId,
        input,
        defaultVapidSubject(push.config.vapidSubject, push.config.publicUrl),
      );
      push.forgetCredentials(request.auth!.projectId);
      return view;
    },
  );

  app.delete(
    '/api/v1/push-credentials/:provider',
    {
      config,
      schema: {
        operationId: 'deletePushCredentials',
        summary: "Remove a provider's credentials",
        description:
          'Forgets the credentials of `fcm`, `apns` or `webpush`; sends to that provider fail until new ones are set.',
        tags: ['push'],
        security,
        params: Type.Object({ provider: Type.String({ description: '`fcm`, `apns` or `webpush`' }) }),
        response: { 200: Type.Object({}) },
      },
    },
    async (request) => {
      const provider = request.params.provider;
      if (provider !== 'fcm' && provider !== 'apns' && provider !== 'webpush')
        throw invalid('UNKNOWN_PROVIDER', 'provider must be fcm, apns or webpush');
      await removeCredentials(db, request.auth!.projectId, provider satisfies Provider);
      push.forgetCredentials(request.auth!.projectId);
      return {};
    },
  );
}
