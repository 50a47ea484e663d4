import { createHash } from 'node:crypto';
import {
  claimCompletedIdempotencyKey,
  hashRequest,
  runIdempotent,
  validateIdempotencyKey,
  type IdempotencyKeyRef,
} from '../idempotency/idempotency.service.js';
import { newTimeOrderedId } from '../lib/ids.js';
import { AsyncQueue } from './async-queue.js';
import type { CallContext } from './call-context.js';
import { pushContext, runContext, storeContext } from './call-context.js';
import { rpcError } from './errors.js';
import { isFinal, type SendInput, type StatusEvent, type Task } from './model.js';
import { preparePushConfig } from './push-configs/push-configs.service.js';
import { selectSkill } from './skills/registry.js';
import { runTask, type RunRequest, type TransactionHooks } from './tasks/task-runner.js';
import { currentStatus, getTask, latestStatus, taskExists } from './tasks/task-store.js';

const SAFE_KEY = /^[\x21-\x7e]{1,200}$/;

/**
 * A10: `X-Service-Idempotency-Key`, else `message.messageId`, per project, 24 h. The two kinds of
 * key live in separate scopes so a header key never collides with somebody's message id. The
 * request hash is of the decoded input, so the same message through v1 or v0.3, blocking or
 * streaming, is the same request.
 */
function idempotency(call: CallContext, input: SendInput) {
  const explicit = call.idempotencyKey;
  const messageKey = SAFE_KEY.test(input.message.messageId)
    ? input.message.messageId
    : createHash('sha256').update(input.message.messageId).digest('hex');
  const ref =
    explicit !== undefined
      ? { projectId: call.projectId, scope: 'a2a.send', key: explicit }
      : { projectId: call.projectId, scope: 'a2a.send.message-id', key: messageKey };
  return { ref, hash: hashRequest(input) };
}

/** Everything that can refuse the request is checked before anything is stored (A6). */
async function prepare(call: CallContext, input: SendInput): Promise<RunRequest> {
  const invocation = selectSkill(input.message);
  const given = input.message.taskId;
  if (given !== undefined) {
    if (!(await taskExists(storeContext(call), given)))
      throw rpcError('TASK_NOT_FOUND', `Task ${given} not found`, { metadata: { taskId: given } });
    throw rpcError(
      'UNSUPPORTED_OPERATION',
      `Task ${given} cannot take more messages: every built-in skill finishes its task`,
      { metadata: { taskId: given } },
    );
  }
  const taskId = newTimeOrderedId();
  const pushConfig =
    input.pushConfig && (await preparePushConfig(pushContext(call), taskId, input.pushConfig, call.codec.version));
  return { taskId, message: input.message, invocation, ...(pushConfig ? { pushConfig } : {}) };
}

const withHistory = (task: Task, historyLength: number | undefined): Task =>
  historyLength === undefined
    ? task
    : { ...task, history: historyLength === 0 ? [] : task.history.slice(-historyLength) };

/** The key was already there: the atomic fast path rolled back; the general path decides. */
class KeyTaken extends Error {}

/**
 * Claims the key inside an atomic skill's transaction, completed at once: its response names the
 * task, whose id is known before the skill runs, and the key commits with the task or not at all.
 */
function keyHooks(call: CallContext, ref: IdempotencyKeyRef, hash: string, taskId: string): TransactionHooks {
  const now = call.deps.clock.now();
  const response = { status: 200, body: { taskId } };
  return {
    begin: async (trx) => {
      if (!(await claimCompletedIdempotencyKey(trx, ref, hash, now, response))) throw new KeyTaken();
    },
  };
}

/**
 * Runs the task at most once per key (A10). An atomic skill claims the key in its own transaction;
 * when the key exists, and for staged skills, `runIdempotent` replays the stored task, refuses a
 * key in progress or reused with another body (HTTP 409, -32603), or runs the task.
 */
async function runOnce(
  call: CallContext,
  input: SendInput,
  request: RunRequest,
  onEvent?: (event: StatusEvent) => void,
): Promise<{ task: Task; replayed: boolean }> {
  const { ref, hash } = idempotency(call, input);
  validateIdempotencyKey(ref.key);
  if (request.invocation.skill.atomic) {
    try {
      return {
        task: await runTask(
          runContext(call),
          { ...request, hooks: keyHooks(call, ref, hash, request.taskId) },
          onEvent,
        ),
        replayed: false,
      };
    } catch (error) {
      if (!(error instanceof KeyTaken)) throw error;
    }
  }
  let task: Task | undefined;
  const { response, replayed } = await runIdempotent(call.deps.db, call.deps.clock, ref, hash, async () => {
    task = await runTask(runContext(call), { ...request, idempotency: ref }, onEvent);
    return { status: 200, body: { taskId: task.id } };
  });
  if (!replayed && task) return { task, replayed };
  return { task: await getTask(storeContext(call), (response.body as { taskId: string }).taskId), replayed: true };
}

/** SendMessage: runs until the task is terminal and returns it; a replay returns the same task. */
export async function sendMessage(call: CallContext, input: SendInput): Promise<Task> {
  const { task } = await runOnce(call, input, await prepare(call, input));
  return withHistory(task, input.historyLength);
}

/**
 * SendStreamingMessage: the task's status changes as they commit, `submitted` first and the
 * terminal one last (A4), also when another instance cancels the task. A replay streams the stored
 * task's current status once. Refusals happen before the returned stream yields anything.
 */
export async function sendStreamingMessage(call: CallContext, input: SendInput): Promise<AsyncIterable<StatusEvent>> {
  const request = await prepare(call, input);
  const queue = new AsyncQueue<StatusEvent>();
  const unsubscribe = await call.events.subscribe(
    request.taskId,
    (event) => queue.push(event),
    () => latestStatus(storeContext(call), request.taskId),
  );
  let replayed: Task | undefined;
  runOnce(call, input, request, (event) => queue.push(event)).then(
    (outcome) => {
      if (outcome.replayed) replayed = outcome.task;
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
      if (replayed) yield await currentStatus(storeContext(call), replayed.id);
    } finally {
      unsubscribe();
    }
  })();
}
