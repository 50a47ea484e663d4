import { createHash } from 'node:crypto';
import { hashRequest, runIdempotent } from '../idempotency/idempotency.service.js';
import { newId } from '../lib/ids.js';
import { AsyncQueue } from './async-queue.js';
import type { CallContext } from './call-context.js';
import { pushContext, runContext, storeContext } from './call-context.js';
import { rpcError } from './errors.js';
import { isFinal, type SendInput, type StatusEvent, type Task } from './model.js';
import { preparePushConfig } from './push-configs/push-configs.service.js';
import { selectSkill } from './skills/registry.js';
import { runTask, type RunRequest } from './tasks/task-runner.js';
import { currentStatus, getTask } from './tasks/task-store.js';
import { findTask } from './tasks/tasks.repository.js';

const SAFE_KEY = /^[\x21-\x7e]{1,200}$/;

/**
 * A10: `X-Service-Idempotency-Key`, else `message.messageId`, per project, 24 h. The two kinds of
 * key live in separate scopes so a header key never collides with somebody's message id. The
 * request hash is of the decoded input, so the same message through v1 or v0.3, blocking or
 * streaming, is the same request.
 */
function idempotency(call: CallContext, input: SendInput) {
  const explicit = call.idempotencyKey;
  const messageKey = SAFE_KEY.test(input.message.messageId) ? input.message.messageId : createHash('sha256').update(input.message.messageId).digest('hex');
  const ref = explicit !== undefined ? { projectId: call.projectId, scope: 'a2a.send', key: explicit } : { projectId: call.projectId, scope: 'a2a.send.message-id', key: messageKey };
  return { ref, hash: hashRequest(input) };
}

/** Everything that can refuse the request is checked before anything is stored (A6). */
async function prepare(call: CallContext, input: SendInput): Promise<RunRequest> {
  const invocation = selectSkill(input.message);
  const given = input.message.taskId;
  if (given !== undefined) {
    if (!(await findTask(call.deps.db, call.projectId, given))) throw rpcError('TASK_NOT_FOUND', `Task ${given} not found`, { metadata: { taskId: given } });
    throw rpcError('UNSUPPORTED_OPERATION', `Task ${given} cannot take more messages: every built-in skill finishes its task`, { metadata: { taskId: given } });
  }
  const taskId = newId();
  const pushConfig = input.pushConfig && (await preparePushConfig(pushContext(call), taskId, input.pushConfig, call.codec.version));
  return { taskId, message: input.message, invocation, ...(pushConfig ? { pushConfig } : {}) };
}

const withHistory = (task: Task, historyLength: number | undefined): Task =>
  historyLength === undefined ? task : { ...task, history: historyLength === 0 ? [] : task.history.slice(-historyLength) };

/** SendMessage: runs until the task is terminal and returns it; a replay returns the same task. */
export async function sendMessage(call: CallContext, input: SendInput): Promise<Task> {
  const request = await prepare(call, input);
  const { ref, hash } = idempotency(call, input);
  let finished: Task | undefined;
  const { response, replayed } = await runIdempotent(call.deps.db, call.deps.clock, ref, hash, async () => {
    finished = await runTask(runContext(call), request);
    return { status: 200, body: { taskId: finished.id } };
  });
  if (!replayed && finished) return withHistory(finished, input.historyLength);
  const { taskId } = response.body as { taskId: string };
  return getTask(storeContext(call), taskId, input.historyLength === undefined ? {} : { historyLength: input.historyLength });
}

/**
 * SendStreamingMessage: the task's status changes as they commit, `submitted` first and the
 * terminal one last (A4), also when another instance cancels the task. A replay streams the stored
 * task's current status once. Refusals happen before the returned stream yields anything.
 */
export async function sendStreamingMessage(call: CallContext, input: SendInput): Promise<AsyncIterable<StatusEvent>> {
  const request = await prepare(call, input);
  const { ref, hash } = idempotency(call, input);
  const queue = new AsyncQueue<StatusEvent>();
  const unsubscribe = await call.events.subscribe(request.taskId, (event) => queue.push(event));
  let replayedTaskId: string | undefined;
  runIdempotent(call.deps.db, call.deps.clock, ref, hash, async () => {
    const task = await runTask(runContext(call), request, (event) => queue.push(event));
    return { status: 200, body: { taskId: task.id } };
  }).then(
    ({ response, replayed }) => {
      if (replayed) replayedTaskId = (response.body as { taskId: string }).taskId;
      queue.close();
    },
    (error: unknown) => queue.fail(error),
  );
  return (async function* stream() {
    try {
      let last = 0;
      for await (const event of queue) {
        if (event.seq <= last) continue;
        last = event.seq;
        yield event;
        if (isFinal(event.status.state)) return;
      }
      if (replayedTaskId !== undefined) yield await currentStatus(storeContext(call), replayedTaskId);
    } finally {
      unsubscribe();
    }
  })();
}
