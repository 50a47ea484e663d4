import { v0_3Card } from '../agent-card.js';
import {
  isFinal,
  type Artifact,
  type AuthenticationInfo,
  type Message,
  type Part,
  type PushConfig,
  type SendInput,
  type Task,
} from '../model.js';
import { invalidParams, iso, paramsValidator, type Codec } from './codec.js';
import { checkPart, decodeRole, defined } from './parts.js';
import * as S from './v0_3.schemas.js';

/** Legacy A2A v0.3 over JSON-RPC (rule `a2a-v03-wire`): slash methods, `kind` discriminators, lowercase states. */
const METHODS = new Map([
  ['message/send', 'send'],
  ['message/stream', 'stream'],
  ['tasks/get', 'get'],
  ['tasks/cancel', 'cancel'],
  ['tasks/resubscribe', 'subscribe'],
  ['tasks/pushNotificationConfig/set', 'push.create'],
  ['tasks/pushNotificationConfig/get', 'push.get'],
  ['tasks/pushNotificationConfig/list', 'push.list'],
  ['tasks/pushNotificationConfig/delete', 'push.delete'],
  ['agent/getAuthenticatedExtendedCard', 'card'],
] as const);

const check = {
  send: paramsValidator(S.V03SendParams),
  query: paramsValidator(S.V03TaskQueryParams),
  taskId: paramsValidator(S.V03TaskIdParams),
  set: paramsValidator(S.V03SetPushConfigParams),
  get: paramsValidator(S.V03GetPushConfigParams),
  del: paramsValidator(S.V03DeletePushConfigParams),
  card: paramsValidator(S.V03CardParams),
};

type WirePart = ReturnType<typeof check.send>['message']['parts'][number];
type WirePushConfig = ReturnType<typeof check.set>['pushNotificationConfig'];

function decodePart(p: WirePart, field: string): Part {
  const kind = p.kind ?? (p.text !== undefined ? 'text' : p.file !== undefined ? 'file' : 'data');
  if (kind === 'file') {
    if (!p.file) throw invalidParams([{ field: `${field}.file`, description: 'a file part needs file' }]);
    return checkPart(
      defined({
        raw: p.file.bytes,
        url: p.file.uri,
        filename: p.file.name,
        mediaType: p.file.mimeType,
        metadata: p.metadata,
      }),
      field,
    );
  }
  return checkPart(
    defined({
      text: kind === 'text' ? p.text : undefined,
      data: kind === 'data' ? p.data : undefined,
      metadata: p.metadata,
    }),
    field,
  );
}

const decodeAuth = (a: { schemes: string[]; credentials?: string } | undefined): AuthenticationInfo | undefined =>
  a && (defined({ scheme: a.schemes[0]!, credentials: a.credentials || undefined }) as AuthenticationInfo);

const decodePushConfig = (c: WirePushConfig): NonNullable<SendInput['pushConfig']> =>
  defined({
    id: c.id || undefined,
    url: c.url,
    token: c.token || undefined,
    authentication: decodeAuth(c.authentication),
  }) as NonNullable<SendInput['pushConfig']>;

function decodeSend(params: unknown): SendInput {
  const p = check.send(params);
  const m = p.message;
  const c = p.configuration;
  const message: Message = {
    ...defined({
      contextId: m.contextId,
      taskId: m.taskId,
      metadata: m.metadata,
      extensions: m.extensions?.length ? m.extensions : undefined,
      referenceTaskIds: m.referenceTaskIds?.length ? m.referenceTaskIds : undefined,
    }),
    messageId: m.messageId,
    role: decodeRole(m.role, 'params.message.role'),
    parts: m.parts.map((part, i) => decodePart(part, `params.message.parts[${i}]`)),
  };
  return {
    message,
    ...defined({
      historyLength: c?.historyLength,
      returnImmediately: c?.blocking === undefined ? undefined : !c.blocking,
      metadata: p.metadata,
    }),
    ...(c?.pushNotificationConfig ? { pushConfig: decodePushConfig(c.pushNotificationConfig) } : {}),
  };
}

/*
 * The encoders build plain literals: a member left `undefined` is omitted by JSON.stringify, the
 * only consumer of encoded values (responses, SSE events, callback bodies), so no copy drops it first.
 */
function encodePart(p: Part): unknown {
  const metadata = p.metadata;
  if (p.text !== undefined) return { kind: 'text', text: p.text, metadata };
  if (p.data !== undefined) {
    const data = typeof p.data === 'object' && p.data !== null && !Array.isArray(p.data) ? p.data : { value: p.data };
    return { kind: 'data', data, metadata };
  }
  return {
    kind: 'file',
    file: { bytes: p.raw, uri: p.url, name: p.filename, mimeType: p.mediaType },
    metadata,
  };
}

const encodeMessage = (m: Message): unknown => ({
  kind: 'message',
  messageId: m.messageId,
  contextId: m.contextId,
  taskId: m.taskId,
  role: m.role === 'agent' ? 'agent' : 'user',
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
  state: s.state,
  message: s.message && encodeMessage(s.message),
  timestamp: iso(s.timestamp),
});

const encodeTask = (t: Task): unknown => ({
  kind: 'task',
  id: t.id,
  contextId: t.contextId,
  status: encodeStatus(t.status),
  artifacts: t.artifacts.length > 0 ? t.artifacts.map(encodeArtifact) : undefined,
  history: t.history.length > 0 ? t.history.map(encodeMessage) : undefined,
  metadata: t.metadata,
});

function encodePushConfig(c: PushConfig, redact: boolean): unknown {
  const auth =
    c.authentication &&
    defined({ schemes: [c.authentication.scheme], credentials: redact ? undefined : c.authentication.credentials });
  return {
    taskId: c.taskId,
    pushNotificationConfig: defined({ id: c.id, url: c.url, token: c.token, authentication: auth }),
  };
}

export const v0_3Codec: Codec = {
  version: '0.3',
  methods: METHODS,
  decode: {
    send: decodeSend,
    stream: decodeSend,
    get: (params) => {
      const p = check.query(params);
      return defined({ id: p.id, historyLength: p.historyLength }) as { id: string };
    },
    list: () => {
      throw new Error('tasks/list is not part of v0.3 JSON-RPC');
    },
    cancel: (params) => ({ id: check.taskId(params).id }),
    subscribe: (params) => ({ id: check.taskId(params).id }),
    'push.create': (params) => {
      const p = check.set(params);
      return { taskId: p.taskId, config: decodePushConfig(p.pushNotificationConfig) };
    },
    'push.get': (params) => {
      const p = check.get(params);
      return defined({ taskId: p.id, id: p.pushNotificationConfigId }) as { taskId: string };
    },
    'push.list': (params) => ({ taskId: check.taskId(params).id }),
    'push.delete': (params) => {
      const p = check.del(params);
      return { taskId: p.id, id: p.pushNotificationConfigId };
    },
    card: (params) => {
      check.card(params);
      return {};
    },
  },
  sendResult: encodeTask,
  task: encodeTask,
  statusUpdate: (e) => ({
    kind: 'status-update',
    taskId: e.taskId,
    contextId: e.contextId,
    status: encodeStatus(e.status),
    final: isFinal(e.status.state),
  }),
  list: () => {
    throw new Error('tasks/list is not part of v0.3 JSON-RPC');
  },
  pushConfig: encodePushConfig,
  pushConfigList: (configs) => configs.map((c) => encodePushConfig(c, true)),
  card: v0_3Card,
  errorData: (error) => defined({ reason: error.reason, fieldViolations: error.violations, metadata: error.metadata }),
  callback: (event, task) => ({ contentType: 'application/json', body: encodeTask({ ...task, status: event.status }) }),
};
