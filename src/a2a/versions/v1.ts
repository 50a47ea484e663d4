import { v1Card } from '../agent-card.js';
import type { Artifact, Message, Part, PushConfig, PushConfigInput, SendInput, StatusUpdate, Task } from '../model.js';
import { iso, paramsValidator, parseTimestampParam, type Codec, type Decoders, type Operation } from './codec.js';
import { checkPart, decodeRole, decodeState, defined, stateToV1 } from './parts.js';
import { readProtoJson, ROLE_ENUM, TASK_STATE_ENUM, type ProtoFields } from './proto-json.js';
import * as S from './v1.schemas.js';

/** A2A v1.0 over JSON-RPC (rule `a2a-v1-wire`): PascalCase methods, ProtoJSON enums, parts without `kind`. */
const METHODS = new Map([
  ['SendMessage', 'send'],
  ['SendStreamingMessage', 'stream'],
  ['GetTask', 'get'],
  ['ListTasks', 'list'],
  ['CancelTask', 'cancel'],
  ['SubscribeToTask', 'subscribe'],
  ['CreateTaskPushNotificationConfig', 'push.create'],
  ['GetTaskPushNotificationConfig', 'push.get'],
  ['ListTaskPushNotificationConfigs', 'push.list'],
  ['DeleteTaskPushNotificationConfig', 'push.delete'],
  ['GetExtendedAgentCard', 'card'],
] as const);

const check = {
  send: paramsValidator(S.V1SendParams),
  get: paramsValidator(S.V1GetTaskParams),
  taskId: paramsValidator(S.V1TaskIdParams),
  list: paramsValidator(S.V1ListTasksParams),
  create: paramsValidator(S.V1CreatePushConfigParams),
  ref: paramsValidator(S.V1PushConfigRefParams),
  listConfigs: paramsValidator(S.V1ListPushConfigsParams),
  card: paramsValidator(S.V1CardParams),
};

function decodeMessage(m: ReturnType<typeof check.send>['message']): Message {
  return {
    ...defined({
      contextId: m.contextId || undefined,
      taskId: m.taskId || undefined,
      metadata: m.metadata,
      extensions: m.extensions?.length ? m.extensions : undefined,
      referenceTaskIds: m.referenceTaskIds?.length ? m.referenceTaskIds : undefined,
    }),
    messageId: m.messageId,
    role: decodeRole(m.role, 'params.message.role'),
    parts: m.parts.map((p, i) =>
      checkPart(
        defined({
          text: p.text,
          data: p.data,
          raw: p.raw,
          url: p.url,
          filename: p.filename,
          mediaType: p.mediaType,
          metadata: p.metadata,
        }),
        `params.message.parts[${i}]`,
      ),
    ),
  };
}

/** "" is ProtoJSON's unset string: no id (one is generated), no token, no credentials. */
function pushConfigInput(c: {
  id?: string;
  url: string;
  token?: string;
  authentication?: { scheme: string; credentials?: string };
}): PushConfigInput {
  const auth =
    c.authentication &&
    (defined({
      scheme: c.authentication.scheme,
      credentials: c.authentication.credentials || undefined,
    }) as PushConfigInput['authentication']);
  return defined({
    id: c.id || undefined,
    url: c.url,
    token: c.token || undefined,
    authentication: auth,
  }) as PushConfigInput;
}

function decodeSend(params: unknown): SendInput {
  const p = check.send(params);
  const c = p.configuration;
  const push = c?.taskPushNotificationConfig;
  return {
    message: decodeMessage(p.message),
    ...defined({ historyLength: c?.historyLength, returnImmediately: c?.returnImmediately, metadata: p.metadata }),
    ...(push ? { pushConfig: pushConfigInput(push) } : {}),
  };
}

/*
 * The encoders build plain literals: a member left `undefined` is omitted by JSON.stringify, the
 * only consumer of encoded values (responses, SSE events, callback bodies), so no copy drops it first.
 */
const encodePart = (p: Part): unknown => ({
  text: p.text,
  data: p.data,
  raw: p.raw,
  url: p.url,
  filename: p.filename,
  mediaType: p.mediaType,
  metadata: p.metadata,
});

const ROLE = { user: 'ROLE_USER', agent: 'ROLE_AGENT', unspecified: 'ROLE_UNSPECIFIED' } as const;

const encodeMessage = (m: Message): unknown => ({
  messageId: m.messageId,
  contextId: m.contextId,
  taskId: m.taskId,
  role: ROLE[m.role],
  parts: m.parts.map(encodePart),
  metadata: m.metadata,
  extensions: m.extensions,
  referenceTaskIds: m.referenceTaskIds,
});

const encodeArtifact = (a: Artifact): unknown => ({
  artifactId: a.artifactId,
  name: a.name,
  description: a.description,
  parts: a.parts.map(encodePart),
  metadata: a.metadata,
});

const encodeStatus = (s: Task['status']): unknown => ({
  state: stateToV1(s.state),
  message: s.message && encodeMessage(s.message),
  timestamp: iso(s.timestamp),
});

const encodeTask = (t: Task): unknown => ({
  id: t.id,
  contextId: t.contextId,
  status: encodeStatus(t.status),
  artifacts: t.artifacts.length > 0 ? t.artifacts.map(encodeArtifact) : undefined,
  history: t.history.length > 0 ? t.history.map(encodeMessage) : undefined,
  metadata: t.metadata,
});

const statusUpdate = (e: StatusUpdate): unknown => ({
  statusUpdate: { taskId: e.taskId, contextId: e.contextId, status: encodeStatus(e.status) },
});

function encodePushConfig(c: PushConfig, redact: boolean): unknown {
  const auth =
    c.authentication &&
    defined({ scheme: c.authentication.scheme, credentials: redact ? undefined : c.authentication.credentials });
  return defined({ id: c.id, taskId: c.taskId, url: c.url, token: c.token, authentication: auth });
}

/** Where each method's params hold enums and integers, for the ProtoJSON reading. */
const PROTO_FIELDS: { [K in Operation]: ProtoFields } = {
  send: { enums: { 'message.role': ROLE_ENUM }, integers: ['configuration.historyLength'] },
  stream: { enums: { 'message.role': ROLE_ENUM }, integers: ['configuration.historyLength'] },
  get: { integers: ['historyLength'] },
  list: { filters: { status: TASK_STATE_ENUM }, integers: ['pageSize', 'historyLength'] },
  cancel: {},
  subscribe: {},
  'push.create': {},
  'push.get': {},
  'push.list': { integers: ['pageSize'] },
  'push.delete': {},
  card: {},
};

const DECODERS: Decoders = {
  send: decodeSend,
  stream: decodeSend,
  get: (params) => {
    const p = check.get(params);
    return defined({ id: p.id, historyLength: p.historyLength }) as { id: string };
  },
  list: (params) => {
    const p = check.list(params ?? {});
    return {
      ...defined({
        // "" is ProtoJSON's unset string; the zero and unknown states were already dropped as "no filter".
        contextId: p.contextId || undefined,
        pageToken: p.pageToken || undefined,
        historyLength: p.historyLength,
        state: p.status === undefined ? undefined : decodeState(p.status, 'params.status'),
        statusTimestampAfter:
          p.statusTimestampAfter === undefined
            ? undefined
            : parseTimestampParam(p.statusTimestampAfter, 'params.statusTimestampAfter'),
      }),
      pageSize: p.pageSize ?? 50,
      includeArtifacts: p.includeArtifacts ?? false,
    };
  },
  cancel: (params) => ({ id: check.taskId(params).id }),
  subscribe: (params) => ({ id: check.taskId(params).id }),
  'push.create': (params) => {
    const p = check.create(params);
    return { taskId: p.taskId, config: pushConfigInput(p) };
  },
  'push.get': (params) => check.ref(params),
  'push.list': (params) => ({ taskId: check.listConfigs(params).taskId }),
  'push.delete': (params) => check.ref(params),
  card: (params) => {
    check.card(params);
    return {};
  },
};

/** Every v1 method reads its params as ProtoJSON first (one place), then checks them against its schema. */
const decode = Object.fromEntries(
  (Object.keys(DECODERS) as Operation[]).map((op) => [
    op,
    (params: unknown) => DECODERS[op](readProtoJson(params, PROTO_FIELDS[op])),
  ]),
) as Decoders;

export const v1Codec: Codec = {
  version: '1.0',
  methods: METHODS,
  decode,
  sendResult: (task) => ({ task: encodeTask(task) }),
  task: encodeTask,
  statusUpdate: statusUpdate,
  list: (r) => ({
    tasks: r.tasks.map(encodeTask),
    nextPageToken: r.nextPageToken,
    pageSize: r.pageSize,
    totalSize: r.totalSize,
  }),
  pushConfig: encodePushConfig,
  pushConfigList: (configs) => ({ configs: configs.map((c) => encodePushConfig(c, true)), nextPageToken: '' }),
  card: v1Card,
  errorData: (error) => [
    {
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason: error.reason,
      domain: 'a2a-protocol.org',
      ...(error.metadata ? { metadata: error.metadata } : {}),
    },
    ...(error.violations
      ? [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: error.violations }]
      : []),
  ],
  callback: (event) => ({ contentType: 'application/a2a+json', body: statusUpdate(event) }),
};
