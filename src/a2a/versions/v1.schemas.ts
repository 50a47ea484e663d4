import { Type } from '@sinclair/typebox';

/**
 * v1 params (A2A v1.0 `a2a.proto`) after the ProtoJSON reading (`proto-json.ts`): lowerCamel names,
 * no nulls, enums as names. Unknown fields are ignored, as A2A asks.
 */
const Id = Type.String({ minLength: 1, maxLength: 255 });
const Metadata = Type.Record(Type.String(), Type.Unknown());
const Tenant = Type.Optional(Type.String({ maxLength: 255 }));

export const V1Part = Type.Object({
  text: Type.Optional(Type.String()),
  data: Type.Optional(Type.Unknown()),
  raw: Type.Optional(Type.String()),
  url: Type.Optional(Type.String({ maxLength: 8192 })),
  filename: Type.Optional(Type.String({ maxLength: 1024 })),
  mediaType: Type.Optional(Type.String({ maxLength: 255 })),
  metadata: Type.Optional(Metadata),
});

export const V1Message = Type.Object({
  messageId: Id,
  role: Type.Union([Type.String({ maxLength: 32 }), Type.Integer({ minimum: 0, maximum: 2 })]),
  parts: Type.Array(V1Part, { minItems: 1, maxItems: 100 }),
  // "" is ProtoJSON's default for an unset string: treated as absent.
  contextId: Type.Optional(Type.String({ maxLength: 255 })),
  taskId: Type.Optional(Type.String({ maxLength: 255 })),
  metadata: Type.Optional(Metadata),
  extensions: Type.Optional(Type.Array(Type.String())),
  referenceTaskIds: Type.Optional(Type.Array(Type.String())),
});

export const V1Authentication = Type.Object({
  scheme: Type.String({ minLength: 1, maxLength: 64 }),
  credentials: Type.Optional(Type.String({ maxLength: 4096 })),
});

const PushConfigFields = {
  id: Type.Optional(Type.String({ maxLength: 255 })),
  url: Type.String({ minLength: 1, maxLength: 2048 }),
  token: Type.Optional(Type.String({ maxLength: 1024 })),
  authentication: Type.Optional(V1Authentication),
  tenant: Tenant,
};

export const V1SendParams = Type.Object({
  message: V1Message,
  configuration: Type.Optional(
    Type.Object({
      acceptedOutputModes: Type.Optional(Type.Array(Type.String())),
      taskPushNotificationConfig: Type.Optional(
        Type.Object({ ...PushConfigFields, taskId: Type.Optional(Type.String()) }),
      ),
      historyLength: Type.Optional(Type.Integer({ minimum: 0 })),
      returnImmediately: Type.Optional(Type.Boolean()),
    }),
  ),
  metadata: Type.Optional(Metadata),
  tenant: Tenant,
});

export const V1GetTaskParams = Type.Object({
  id: Id,
  historyLength: Type.Optional(Type.Integer({ minimum: 0 })),
  tenant: Tenant,
});
export const V1TaskIdParams = Type.Object({ id: Id, metadata: Type.Optional(Metadata), tenant: Tenant });

export const V1ListTasksParams = Type.Object({
  contextId: Type.Optional(Type.String({ maxLength: 255 })),
  status: Type.Optional(Type.String({ maxLength: 64 })),
  pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  pageToken: Type.Optional(Type.String({ maxLength: 512 })),
  historyLength: Type.Optional(Type.Integer({ minimum: 0 })),
  statusTimestampAfter: Type.Optional(Type.String({ maxLength: 64 })),
  includeArtifacts: Type.Optional(Type.Boolean()),
  tenant: Tenant,
});

export const V1CreatePushConfigParams = Type.Object({ ...PushConfigFields, taskId: Id });
export const V1PushConfigRefParams = Type.Object({ taskId: Id, id: Id, tenant: Tenant });
export const V1ListPushConfigsParams = Type.Object({
  taskId: Id,
  pageSize: Type.Optional(Type.Integer({ minimum: 0 })),
  pageToken: Type.Optional(Type.String()),
  tenant: Tenant,
});
export const V1CardParams = Type.Union([Type.Object({ tenant: Tenant }), Type.Undefined(), Type.Null()]);
