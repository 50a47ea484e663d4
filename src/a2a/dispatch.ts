import { findProject } from '../projects/projects.service.js';
import { extendedDescription } from './agent-card.js';
import type { CallContext } from './call-context.js';
import { pushContext, storeContext } from './call-context.js';
import type { StatusUpdate } from './model.js';
import {
  createPushConfig,
  deletePushConfig,
  getPushConfig,
  listPushConfigs,
} from './push-configs/push-configs.service.js';
import { sendMessage, sendStreamingMessage } from './send-message.js';
import { cancelTask, currentStatus, getTask, listTasks } from './tasks/task-store.js';
import type { Operation, OperationParams } from './versions/codec.js';

/** A method's outcome: a JSON-RPC `result`, or a stream of status updates for SSE. */
export type CallResult = { kind: 'json'; result: unknown } | { kind: 'stream'; events: AsyncIterable<StatusUpdate> };

type Handlers = { [K in Operation]: (call: CallContext, params: OperationParams[K]) => Promise<CallResult> };

const json = (result: unknown): CallResult => ({ kind: 'json', result });

async function* once(event: StatusUpdate): AsyncIterable<StatusUpdate> {
  yield event;
}

/** One handler per operation, shared by both protocol versions; only the codec differs. */
const HANDLERS: Handlers = {
  send: async (call, p) => json(call.codec.sendResult(await sendMessage(call, p))),
  stream: async (call, p) => ({ kind: 'stream', events: await sendStreamingMessage(call, p) }),
  get: async (call, p) =>
    json(
      call.codec.task(
        await getTask(
          storeContext(call),
          p.id,
          p.historyLength === undefined ? {} : { historyLength: p.historyLength },
        ),
      ),
    ),
  list: async (call, p) => json(call.codec.list(await listTasks(storeContext(call), p))),
  cancel: async (call, p) => json(call.codec.task(await cancelTask(storeContext(call), p.id))),
  // Rule `a2a-streams`: one snapshot of the current status (terminal tasks included), then the stream closes.
  subscribe: async (call, p) => ({ kind: 'stream', events: once(await currentStatus(storeContext(call), p.id)) }),
  'push.create': async (call, p) =>
    json(
      call.codec.pushConfig(await createPushConfig(pushContext(call), p.taskId, p.config, call.codec.version), false),
    ),
  'push.get': async (call, p) =>
    json(call.codec.pushConfig(await getPushConfig(pushContext(call), p.taskId, p.id), true)),
  'push.list': async (call, p) => json(call.codec.pushConfigList(await listPushConfigs(pushContext(call), p.taskId))),
  'push.delete': async (call, p) => {
    await deletePushConfig(pushContext(call), p.taskId, p.id);
    return json(null);
  },
  card: async (call) => {
    const project = await findProject(call.deps.db, call.projectId);
    return json(
      call.codec.card({
        endpointUrl: call.endpointUrl(),
        description: extendedDescription(project?.name ?? call.projectId, call.projectId),
      }),
    );
  },
};

/** Decodes `params` with the call's codec (throws -32602) and runs the operation. */
export function dispatch<K extends Operation>(call: CallContext, operation: K, params: unknown): Promise<CallResult> {
  const decoded = call.codec.decode[operation](params);
  return (HANDLERS[operation] as (call: CallContext, params: OperationParams[K]) => Promise<CallResult>)(call, decoded);
}
