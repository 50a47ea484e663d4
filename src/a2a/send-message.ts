import { createHash } from 'node:crypto';
import { AppError } from '../errors.js';
import { hashRequest, IDEMPOTENCY_TTL_MS, validateIdempotencyKey } from '../idempotency/idempotency.service.js';
import { newTimeOrderedId } from '../lib/ids.js';
import { AsyncQueue } from './async-queue.js';
import type { CallContext } from './call-context.js';
import { pushContext, runContext, storeContext } from './call-context.js';
import { rpcError } from './errors.js';
import { isFinal, isTerminal, type SendInput, type StatusUpdate, type Task } from './model.js';
import { preparePushConfig } from './push-configs/push-configs.service.js';
import { selectSkill } from './skills/registry.js';
import { runTask, type RunRequest } from './tasks/task-runner.js';
import {
  currentStatus,
  findKeyHolder,
  getTask,
  latestStatus,
  releaseKey,
  TaskKeyHeld,
  taskExists,
  type TaskKey,
} from './tasks/task-store.js';

const SAFE_KEY = /^[\x21-\x7e]{1,200}$/;
/** A key held by a task still running after this long belongs to a request that died; it may be taken over. */
const ABANDONED_AFTER_MS = 10 * 60 * 1000;

/**
 * Rule `a2a-idempotency`: `X-Service-Idempotency-Key`, else `message.messageId`, per project, 24 h, stored on the task
 * the request started (migration 0018). The two kinds of key are told apart by a prefix so a header
 * key never collides with somebody's message id. The request hash is of the decoded input, so the
 * same message through v1 or v0.3, blocking or streaming, is the same request.
 */
function taskKey(call: CallContext, input: SendInput): TaskKey {
  const explicit = call.idempotencyKey;
  let key: string;
  if (explicit !== undefined) {
    validateIdempotencyKey(explicit);
    key = `h:${explicit}`;
  } else {
    const id = input.message.messageId;
    key = `m:${SAFE_KEY.test(id) ? id : createHash('sha256').update(id).digest('hex')}`;
  }
  return { key, hash: hashRequest(input) };
}

type KeyedRequest = RunRequest & { key: TaskKey };

/** Everything that can refuse the request is checked before anything is stored (rule `a2a-skills`). */
async function prepare(call: CallContext, input: SendInput): Promise<KeyedRequest> {
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
  return {
    taskId,
    message: input.message,
    invocation,
    ...(pushConfig ? { pushConfig } : {}),
    key: taskKey(call, input),
  };
}

const withHistory = (task: Task, historyLength: number | undefined): Task =>
  historyLength === undefined
    ? task
    : { ...task, history: historyLength === 0 ? [] : task.history.slice(-historyLength) };

/**
 * What to do about the task holding the key: the holder to replay, or `undefined` after releasing
 * a key past its 24 h (or held by a task running for longer than a live request would), so the
 * caller may claim it again. A key held with another request, or by a task still running, is a
 * conflict (HTTP 409, -32603).
 */
async function holderToReplay(call: CallContext, key: TaskKey): Promise<string | undefined> {
  const holder = await findKeyHolder(storeContext(call), key.key);
  if (!holder) return undefined; // released between our insert and this read
  const now = call.deps.clock.now();
  const running = !isTerminal(holder.state);
  if (holder.createdAt + IDEMPOTENCY_TTL_MS <= now || (running && now - holder.createdAt > ABANDONED_AFTER_MS)) {
    await releaseKey(storeContext(call), holder.id, key.key);
    return undefined;
  }
  if (holder.hash !== key.hash)
    throw new AppError(
      'conflict',
      'IDEMPOTENCY_KEY_REUSED',
      'Idempotency key was already used with a different request',
    );
  if (running)
    throw new AppError(
      'conflict',
      'IDEMPOTENCY_KEY_IN_PROGRESS',
      'A request with this idempotency key is still in progress',
      {
        retryAfterSeconds: 1,
      },
    );
  return holder.id;
}

/**
 * Runs the task at most once per key (rule `a2a-idempotency`). The task's insert claims the key (atomic skills: in the
 * skill's transaction, so the key commits with the user or not at all); when another task holds it,
 * that task is replayed, or the request refused. A staged task that fails to finish releases its
 * key, so a retry runs at once (as the reaper does when its instance dies).
 */
async function runOnce(
  call: CallContext,
  request: KeyedRequest,
  onEvent?: (event: StatusUpdate) => void,
): Promise<{ task: Task; replayed: boolean }> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return { task: await runTask(runContext(call), request, onEvent), replayed: false };
    } catch (error) {
      if (!(error instanceof TaskKeyHeld)) {
        if (!request.invocation.skill.atomic)
          await releaseKey(storeContext(call), request.taskId, request.key.key).catch(() => undefined);
        throw error;
      }
    }
    const holder = await holderToReplay(call, request.key);
    if (holder !== undefined) return { task: await getTask(storeContext(call), holder), replayed: true };
  }
  throw new AppError('conflict', 'IDEMPOTENCY_KEY_BUSY', 'Idempotency key is changing hands, retry', {
    retryAfterSeconds: 1,
  });
}

/** SendMessage: runs until the task is terminal and returns it; a replay returns the same task. */
export async function sendMessage(call: CallContext, input: SendInput): Promise<Task> {
  const { task } = await runOnce(call, await prepare(call, input));
  return withHistory(task, input.historyLength);
}

/**
 * SendStreamingMessage: the task's status changes as they commit, `submitted` first and the
 * terminal one last (rule `a2a-streams`), also when another instance cancels the task. A replay streams the stored
 * task's current status once. Refusals happen before the returned stream yields anything.
 */
export async function sendStreamingMessage(call: CallContext, input: SendInput): Promise<AsyncIterable<StatusUpdate>> {
  const request = await prepare(call, input);
  const queue = new AsyncQueue<StatusUpdate>();
  const unsubscribe = await call.updates.subscribe(
    request.taskId,
    (event) => queue.push(event),
    () => latestStatus(storeContext(call), request.taskId),
  );
  let replayed: Task | undefined;
  runOnce(call, request, (event) => queue.push(event)).then(
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
