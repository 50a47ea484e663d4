import { Type, type Static } from '@sinclair/typebox';
import { ProjectUserId } from '../users/users.schemas.js';

/** Device ids and FCM tokens: printable ASCII without spaces. */
const PRINTABLE_ASCII_PATTERN = '^[\\x21-\\x7E]+$';
export const DeviceId = Type.String({ minLength: 1, maxLength: 255, pattern: PRINTABLE_ASCII_PATTERN });
/** Web Push key material: base64 or base64url. */
const BASE64_PATTERN = '^[A-Za-z0-9+/_=-]+$';

export const WebPushSubscription = Type.Object(
  {
    endpoint: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https://[\\x21-\\x7E]+$' }),
    expirationTime: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
    keys: Type.Object({
      p256dh: Type.String({ minLength: 1, maxLength: 512, pattern: BASE64_PATTERN }),
      auth: Type.String({ minLength: 1, maxLength: 256, pattern: BASE64_PATTERN }),
    }),
  },
  { additionalProperties: false },
);

export const RegisterDeviceBody = Type.Object(
  {
    device_id: Type.Optional(DeviceId),
    project_user_id: ProjectUserId,
    platform: Type.Union([Type.Literal('android'), Type.Literal('ios'), Type.Literal('web')]),
    fcm_token: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, pattern: PRINTABLE_ASCII_PATTERN })),
    apns_token: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '^[0-9a-fA-F]+$' })),
    web_push_subscription: Type.Optional(WebPushSubscription),
  },
  {
    additionalProperties: false,
    title: 'RegisterDeviceRequest',
    examples: [
      { device_id: 'dev_0c5b2f', project_user_id: 'user-42', platform: 'android', fcm_token: 'fcm-token-from-the-app' },
    ],
  },
);
export type RegisterDeviceBody = Static<typeof RegisterDeviceBody>;

const deviceExample = {
  device_id: 'dev_0c5b2f',
  project_user_id: 'user-42',
  platform: 'android',
  provider: 'fcm',
  status: 'active',
  created_at: '2026-01-15T09:30:00.000Z',
  updated_at: '2026-01-15T09:30:00.000Z',
};

export const DeviceResponse = Type.Object(
  {
    device_id: Type.String(),
    project_user_id: Type.String(),
    platform: Type.String(),
    provider: Type.String(),
    status: Type.String(),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { title: 'Device', examples: [deviceExample] },
);

export const DeviceList = Type.Object(
  { devices: Type.Array(DeviceResponse) },
  { title: 'DeviceList', examples: [{ devices: [deviceExample] }] },
);
