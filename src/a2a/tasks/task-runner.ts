import type { LogFn } from 'pino';
import type { Db } from '../../db/database.js';
import { AppError } from '../../errors.js';
import { newId, newTimeOrderedId } from '../../lib/ids.js';
import type { Artifact, Message, StatusUpdate, Task, TaskStatus } from '../model.js';
import type { StoredPushConfig } from '../push-configs/push-configs.service.js';
import type { SkillInvocation } from '../skills/registry.js';
import type { SkillContext, SkillWrite } from '../skills/skill.js';
import { sqlDialect } from '../../db/dialect.js';
import type { TaskWrites } from './task-writes.js';
import { advanceTask, recordTask, startTask, type StoreContext } from './task-store.js';
import { keepTaskLease, TASK_LEASE_MS } from './task-leases.js';
import type { TaskKey } from './tasks.repository.js';

export interface RunRequest {
  taskId: string;
  message: Message;
  invocation: SkillInvocation;
  pushConfig?: StoredPushConfig;
  /**
   * The request's idempotency key (rule `a2a-idempotency`), stored on the task: the task's insert claims it, and
   * `TaskKeyHeld` is thrown, with nothing stored, when another task holds it.
   */
  key?: TaskKey;
}

export interface RunContext extends StoreContext {
  skill: SkillContext;
  /** Where a task and its skill's write go as one statement (PostgreSQL). */
  taskWrites: TaskWrites;
  logger: { info: LogFn; warn: LogFn; error: LogFn };
}

/** Carries a skill's failure out of its rolled-back transaction. */
class SkillFailed extends Error {
  override readonly cause: unknown;
  constructor(cause: unknown) {
    super('skill failed');
    this.cause = cause;
  }
}

interface Outcome {
  status: TaskStatus;
  artifacts: Artifact[];
}

function agentMessage(task: Task, text: string, reason: string): Message {
  return {
    messageId: newId(),
    role: 'agent',
    parts: [{ text }],
    taskId: task.id,
    contextId: task.contextId,
    metadata: { reason },
  };
}

/** Rule `a2a-skills`: a refusal (or input the feature service refused) ends `rejected`, any other failure `failed`, both saying why. */
function failure(ctx: RunContext, task: Task, error: unknown): Outcome {
  const now = ctx.clock.now();
  if (error instanceof AppError && error.kind !== 'internal') {
    const state = error.kind === 'refused' || error.kind === 'invalid' ? 'rejected' : 'failed';
    return { status: { state, message: agentMessage(task, error.message, error.code), timestamp: now }, artifacts: [] };
  }
  ctx.logger.error({ err: error, task_id: task.id }, 'skill failed');
  return {
    status: {
      state: 'failed',
      message: agentMessage(task, 'Internal error while running the skill', 'INTERNAL_ERROR'),
      timestamp: now,
    },
    artifacts: [],
  };
}

async function execute(ctx: RunContext, skillCtx: SkillContext, invocation: SkillInvocation): Promise<Outcome> {
  const result = await invocation.skill.run(skillCtx, invocation.input);
  const artifact: Artifact = { artifactId: newId(), name: result.artifactName, parts: [{ data: result.data }] };
  return { status: { state: 'completed', timestamp: ctx.clock.now() }, artifacts: [artifact] };
}

/**
 * An atomic skill with a one-statement `write`, where the database nests writes (PostgreSQL), and no
 * push config to store: the task is stored `completed` by the write's own statement. In every other
 * case (the skill refusing its input, the write returning no row, a held key, any database error)
 * nothing was stored and `undefined` sends the task the usual way, which reaches that outcome itself.
 */
async function runAsOneStatement(
  ctx: RunContext,
  request: RunRequest,
  task: Task,
  submitted: TaskStatus,
): Promise<{ task: Task; events: StatusUpdate[] } | undefined> {
  const { skill, input } = request.invocation;
  if (!skill.write || request.pushConfig || !sqlDialect(ctx.db).supportsWritesInWith) return undefined;
  const completed: TaskStatus = { state: 'completed', timestamp: ctx.clock.now() };
  const statuses = [submitted, task.status, completed];
  const record = { id: task.id, projectId: ctx.projectId, contextId: task.contextId, skill: skill.descriptor.id };
  let write: SkillWrite;
  try {
    write = skill.write({ ...ctx.skill, db: ctx.db }, input);
  } catch (error) {
    // Input the skill refuses: its run, in the transaction, refuses it again and records why. Any
    // other failure is a broken fast path, which would otherwise show only as slower tasks.
    if (!(error instanceof AppError))
      ctx.logger.warn(
        { err: error, task_id: task.id },
        'building the one-statement task write failed; ran the transaction',
      );
    return undefined;
  }
  const artifacts = await ctx.taskWrites({
    task: { ...record, createdAt: submitted.timestamp },
    statuses,
    messages: task.history,
    artifact: { artifactId: newId(), name: write.artifactName },
    write,
    key: request.key,
  });
  if (!artifacts) return undefined;
  const events = statuses.map((status, i) => ({ taskId: task.id, contextId: task.contextId, seq: i + 1, status }));
  return { task: { ...task, status: completed, artifacts }, events };
}

/**
 * An atomic skill's write and the task's whole life commit in one transaction, so the task is
 * completed exactly when the write is (with its key: the key commits with the task or not at all).
 * A failure rolls the write back and records the task failed. `TaskKeyHeld` records nothing.
 */
async function runAtomic(
  ctx: RunContext,
  request: RunRequest,
  task: Task,
  submitted: TaskStatus,
): Promise<{ task: Task; events: StatusUpdate[] }> {
  const joined = await runAsOneStatement(ctx, request, task, submitted);
  if (joined) return joined;
  const skill = request.invocation.skill.descriptor.id;
  const record = async (trx: Db, outcome: Outcome) => {
    const final = { ...task, status: outcome.status, artifacts: outcome.artifacts };
    const events = await recordTask(
      trx,
      ctx,
      final,
      skill,
      [submitted, task.status, outcome.status],
      request.pushConfig,
      request.key,
    );
    return { task: final, events };
  };
  try {
    return await ctx.writes.run(async (trx) => {
      let outcome: Outcome;
      try {
        outcome = await execute(ctx, { ...ctx.skill, db: trx }, request.invocation);
      } catch (error) {
        throw new SkillFailed(error);
      }
      return record(trx, outcome);
    });
  } catch (error) {
    if (!(error instanceof SkillFailed)) throw error;
    const outcome = failure(ctx, task, error.cause);
    return ctx.writes.run((trx) => record(trx, outcome));
  }
}

/**
 * The lifecycle of one SendMessage (rule `task-lifecycle`): `submitted`, `working`, then a
 * terminal state. A staged skill's task is stored `working` before the skill runs (visible and
 * cancelable meanwhile); an atomic skill's task is stored once, in the skill's own transaction.
 * `onEvent` receives every status change in order, each after it committed: `submitted` first, the
 * terminal one last (rule `a2a-streams`). Resolves with the final task.
 */
export async function runTask(
  ctx: RunContext,
  request: RunRequest,
  onEvent?: (event: StatusUpdate) => void,
): Promise<Task> {
  const contextId = request.message.contextId ?? newTimeOrderedId();
  const submittedAt = ctx.clock.now();
  const submitted: TaskStatus = { state: 'submitted', timestamp: submittedAt };
  const task: Task = {
    id: request.taskId,
    contextId,
    status: { state: 'working', timestamp: submittedAt },
    artifacts: [],
    history: [{ ...request.message, taskId: request.taskId, contextId }],
  };
  if (request.invocation.skill.atomic) {
    const done = await runAtomic(ctx, request, task, submitted);
    ctx.updates.publishLocal(done.events);
    if (onEvent) for (const event of done.events) onEvent(event);
    return done.task;
  }
  const started = await startTask(
    ctx,
    task,
    request.invocation.skill.descriptor.id,
    submittedAt,
    request.pushConfig,
    submittedAt + TASK_LEASE_MS,
    request.key,
  );
  const leaseKeeper = keepTaskLease(ctx.db, task.id, () => ctx.clock.now(), TASK_LEASE_MS, ctx.logger);
  try {
    started.events.forEach((e) => onEvent?.(e));
    let outcome: Outcome;
    try {
      outcome = await execute(ctx, ctx.skill, request.invocation);
    } catch (error) {
      outcome = failure(ctx, task, error);
    }
    const finished = await advanceTask(ctx, started.live, outcome.status, outcome.artifacts);
    onEvent?.(finished.event);
    return finished.task;
  } finally {
    await leaseKeeper.stop();
  }
}
