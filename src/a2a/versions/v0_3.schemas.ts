import { Type } from '@sinclair/typebox';

/** v0.3 params (A2A v0.3.0 `types.ts`): `kind` discriminators, nested push configs. */
const Id = Type.String({ minLength: 1, maxLength: 255 });
const Metadata = Type.Record(Type.String(), Type.Unknown());

export const V03Part = Type.Object({
  kind: Type.Optional(Type.Union([Type.Literal('text'), Type.Literal('data'), Type.Literal('file')])),
  text: Type.Optional(Type.String()),
  data: Type.Optional(Type.Unknown()),
  file: Type.Optional(
    Type.Object({
      bytes: Type.Optional(Type.String()),
      uri: Type.Optional(Type.String({ maxLength: 8192 })),
      name: Type.Optional(Type.String({ maxLength: 1024 })),
      mimeType: Type.Optional(Type.String({ maxLength: 255 })),
    }),
  ),
  metadata: Type.Optional(Metadata),
});

export const V03Message = Type.Object({
  kind: Type.Optional(Type.Literal('message')),
  messageId: Id,
  role: Type.String({ maxLength: 32 }),
  parts: Type.Array(V03Part, { minItems: 1, maxItems: 100 }),
  contextId: Type.Optional(Id),
  taskId: Type.Optional(Id),
  metadata: Type.Optional(Metadata),
  extensions: Type.Optional(Type.Array(Type.String())),
  referenceTaskIds: Type.Optional(Type.Array(Type.String())),
});

export const V03PushConfig = Type.Object({
  id: Type.Optional(Type.String({ maxLength: 255 })),
  url: Type.String({ minLength: 1, maxLength: 2048 }),
  token: Type.Optional(Type.String({ maxLength: 1024 })),
  authentication: Type.Optional(
    Type.Object({
      schemes: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1 }),
      credentials: Type.Optional(Type.String({ maxLength: 4096 })),
    }),
  ),
});

export const V03SendParams = Type.Object({
  message: V03Message,
  configuration: Type.Optional(
    Type.Object({
      acceptedOutputModes: Type.Optional(Type.Array(Type.String())),
      historyLength: Type.Optional(Type.Integer({ minimum: 0 })),
      pushNotificationConfig: Type.Optional(V03PushConfig),
      blocking: Type.Optional(Type.Boolean()),
    }),
  ),
  metadata: Type.Optional(Metadata),
});

export const V03TaskQueryParams = Type.Object({
  id: Id,
  historyLength: Type.Optional(Type.Integer({ minimum: 0 })),
  metadata: Type.Optional(Metadata),
});
export const V03TaskIdParams = Type.Object({ id: Id, metadata: Type.Optional(Metadata) });
export const V03SetPushConfigParams = Type.Object({ taskId: Id, pushNotificationConfig: V03PushConfig });
export const V03GetPushConfigParams = Type.Object({
  id: Id,
  pushNotificationConfigId: Type.Optional(Id),
  metadata: Type.Optional(Metadata),
});
export const V03DeletePushConfigParams = Type.Object({
  id: Id,
  pushNotificationConfigId: Id,
  metadata: Type.Optional(Metadata),
});
export const V03CardParams = Type.Union([Type.Object({}), Type.Undefined(), Type.Null()]);
