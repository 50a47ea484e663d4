import type { LogFn } from 'pino';
import { AppError } from '../../errors.js';
import { newId } from '../../lib/ids.js';
import type { Artifact, Message, StatusEvent, Task, TaskStatus } from '../model.js';
import type { StoredPushConfig } from '../push-configs/push-configs.service.js';
import type { SkillInvocation } from '../skills/registry.js';
import type { SkillContext } from '../skills/skill.js';
import { advanceTask, startTask, type StoreContext } from './task-store.js';

export interface RunRequest {
  taskId: string;
  message: Message;
  invocation: SkillInvocation;
  pushConfig?: StoredPushConfig;
}

export interface RunContext extends StoreContext {
  skill: SkillContext;
  logger: { info: LogFn; warn: LogFn; error: LogFn };
}

function agentMessage(task: { id: string; contextId: string }, text: string, reason: string): Message {
  return { messageId: newId(), role: 'agent', parts: [{ text }], taskId: task.id, contextId: task.contextId, metadata: { reason } };
}

/** Runs the skill; every outcome is a status: completed with its artifact, rejected or failed with why (A6). */
async function execute(ctx: RunContext, task: Task, invocation: SkillInvocation): Promise<{ status: TaskStatus; artifacts: Artifact[] }> {
  try {
    const result = await invocation.skill.run(ctx.skill, invocation.input);
    const artifact: Artifact = { artifactId: newId(), name: result.artifactName, parts: [{ data: result.data }] };
    return { status: { state: 'completed', timestamp: ctx.clock.now() }, artifacts: [artifact] };
  } catch (error) {
    if (error instanceof AppError && error.kind !== 'internal') {
      const state = error.kind === 'refused' || error.kind === 'invalid' ? 'rejected' : 'failed';
      return { status: { state, message: agentMessage(task, error.message, error.code), timestamp: ctx.clock.now() }, artifacts: [] };
    }
    ctx.logger.error({ err: error, task_id: task.id }, 'skill failed');
    return { status: { state: 'failed', message: agentMessage(task, 'Internal error while running the skill', 'INTERNAL_ERROR'), timestamp: ctx.clock.now() }, artifacts: [] };
  }
}

/**
 * The lifecycle of one SendMessage: the task is stored `working` (after `submitted`), the skill
 * runs, and the task ends terminal. `onEvent` receives every status change in order, each after it
 * committed; the first is `submitted`, the last terminal (A4). Resolves with the final task.
 */
export async function runTask(ctx: RunContext, request: RunRequest, onEvent?: (event: StatusEvent) => void): Promise<Task> {
  const contextId = request.message.contextId ?? newId();
  const submittedAt = ctx.clock.now();
  const task: Task = {
    id: request.taskId,
    contextId,
    status: { state: 'working', timestamp: submittedAt },
    artifacts: [],
    history: [{ ...request.message, taskId: request.taskId, contextId }],
  };
  const T0 = performance.now();
  const started = await startTask(ctx, task, request.invocation.skill.descriptor.id, submittedAt, request.pushConfig);
  started.forEach((e) => onEvent?.(e));
  const T1 = performance.now();
  const outcome = await execute(ctx, task, request.invocation);
  const T2 = performance.now();
  const finished = await advanceTask(ctx, task, outcome.status, outcome.artifacts);
  const T3 = performance.now();
  (globalThis as any).__t ??= [0,0,0,0]; const g = (globalThis as any).__t; g[0]+=T1-T0; g[1]+=T2-T1; g[2]+=T3-T2; g[3]++;
  onEvent?.(finished.event);
  return finished.task;
}
