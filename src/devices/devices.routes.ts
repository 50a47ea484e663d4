import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { WriteCommitter } from '../db/group-commit.js';
import type { Clock } from '../lib/clock.js';
import type { OutboundPolicy } from '../lib/outbound-url-policy.js';
import { ProjectUserId } from '../users/users.schemas.js';
import { DeviceId, DeviceList, DeviceResponse, RegisterDeviceBody } from './devices.schemas.js';
import * as devices from './devices.service.js';
import type { NewDeviceWrites } from './new-device-writes.js';
import { checkWebPushEndpoint } from './web-push-endpoint.js';
import { identityCheck, type IdentityDeps } from '../identity/identity.http.js';

const security = [{ projectId: [], apiKey: [] }];
const ErrorBody = Type.Object({ error: Type.String() });

export interface DeviceRouteDeps extends IdentityDeps {
  clock: Clock;
  /** Registrations share commits on the embedded database. */
  writes: WriteCommitter;
  /** A device id Herald generates is written here first (one statement, shared under load, on PostgreSQL). */
  newDevices: NewDeviceWrites;
  /** Web Push endpoints are tenant URLs, checked against the outbound policy at registration. */
  outbound: OutboundPolicy;
}

export function registerDeviceRoutes(fastify: FastifyInstance, deps: DeviceRouteDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, clock } = deps;
  const verifyIdentity = identityCheck(deps);

  app.post(
    '/api/v1/devices',
    {
      config: { auth: 'client', rateLimitClass: 'management' },
      schema: {
        operationId: 'registerDevice',
        summary: 'Register or refresh a device (public or secret key)',
        description:
          "Registers the push token (FCM, APNs) or Web Push subscription of one of the user's devices, or refreshes it when `device_id` is known. With the public key, a device_id that belongs to another user is a 409; with identity verification on, X-Service-User-Token must be signed for project_user_id.",
        tags: ['devices'],
        security,
        body: RegisterDeviceBody,
        response: { 200: DeviceResponse, 400: ErrorBody, 401: ErrorBody, 409: ErrorBody },
      },
    },
    async (request) => {
      await verifyIdentity(request, [request.body.project_user_id]);
      checkWebPushEndpoint(deps.outbound, request.body);
      // The public key never moves a known device id to another user (docs/security.md).
      const options = { keepDeviceOwner: request.auth!.kind === 'public' };
      return devices.deviceToResponse(
        await devices.registerDevice(
          deps.writes,
          clock,
          request.auth!.projectId,
          request.body,
          options,
          deps.newDevices,
        ),
      );
    },
  );

  app.delete(
    '/api/v1/devices/:device_id',
    {
      config: { auth: 'secret', rateLimitClass: 'management' },
      schema: {
        operationId: 'deleteDevice',
        summary: 'Delete a device',
        description: 'Removes the device so nothing is sent to it again. An unknown device id also answers 200.',
        tags: ['devices'],
        security,
        params: Type.Object({ device_id: DeviceId }),
        response: { 200: Type.Object({}), 400: ErrorBody, 401: ErrorBody },
      },
    },
    async (request) => {
      await devices.deleteDevice(db, request.auth!.projectId, request.params.device_id);
      return {};
    },
  );

  app.get(
    '/api/v1/users/:project_user_id/devices',
    {
      config: { auth: 'secret', rateLimitClass: 'management' },
      schema: {
        operationId: 'listUserDevices',
        summary: "List a user's devices",
        description: "The user's devices with their provider and status; tokens and subscriptions are never shown.",
        tags: ['devices'],
        security,
        params: Type.Object({ project_user_id: ProjectUserId }),
        response: {
          200: DeviceList,
          400: ErrorBody,
          404: ErrorBody,
          401: ErrorBody,
        },
      },
    },
    async (request) => ({
      devices: (await devices.listUserDevices(db, request.auth!.projectId, request.params.project_user_id)).map(
        devices.deviceToResponse,
      ),
    }),
  );
}
