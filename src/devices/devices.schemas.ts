import { Type, type Static } from '@sinclair/typebox';
import { ProjectUserId } from '../users/users.schemas.js';

const DEVICE_ID_PATTERN = '^[\\x21-\\x7E]+$';
export const DeviceId = Type.String({ minLength: 1, maxLength: 255, pattern: DEVICE_ID_PATTERN });

export const WebPushSubscription = Type.Object(
  {
    endpoint: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https://' }),
    expirationTime: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
    keys: Type.Object({ p256dh: Type.String({ minLength: 1, maxLength: 512 }), auth: Type.String({ minLength: 1, maxLength: 256 }) }),
  },
  { additionalProperties: false },
);

export const RegisterDeviceBody = Type.Object(
  {
    device_id: Type.Optional(DeviceId),
    project_user_id: ProjectUserId,
    platform: Type.Union([Type.Literal('android'), Type.Literal('ios'), Type.Literal('web')]),
    fcm_token: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
    apns_token: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '^[0-9a-fA-F]+$' })),
    web_push_subscription: Type.Optional(WebPushSubscription),
  },
  { additionalProperties: false },
);
export type RegisterDeviceBody = Static<typeof RegisterDeviceBody>;

export const DeviceResponse = Type.Object({
  device_id: Type.String(),
  project_user_id: Type.String(),
  platform: Type.String(),
  provider: Type.String(),
  status: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
});
