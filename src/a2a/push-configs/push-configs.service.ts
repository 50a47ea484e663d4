import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import {
  OutboundHostUnresolved,
  OutboundUrlRefused,
  resolveOutboundTarget,
  type OutboundPolicy,
} from '../../lib/outbound-url-policy.js';
import { newId } from '../../lib/ids.js';
import { POST_MAX_ATTEMPTS, POST_PROTOCOLS } from '../../lib/outbound-post.js';
import { enqueueJob } from '../../jobs/jobs.js';
import { rpcError } from '../errors.js';
import type { ProtocolVersion, PushConfig, PushConfigInput, StatusUpdate, Task } from '../model.js';
import { findTask } from '../tasks/tasks.repository.js';
import { invalidParams } from '../versions/codec.js';
import { codecFor } from '../versions/codecs.js';
import { openSecrets, sealSecrets, type SecretBoxSource } from './push-config-secrets.js';
import * as repo from './push-configs.repository.js';

export type { StoredPushConfig } from './push-configs.repository.js';

export interface PushConfigContext {
  db: Db;
  clock: Clock;
  projectId: string;
  /** The outbound-URL policy callback destinations are checked against (http and https). */
  outbound: OutboundPolicy;
  /** Seals the token and credentials at rest. */
  secrets: SecretBoxSource;
}

declare module '../../jobs/job-types.js' {
  interface JobPayloads {
    'a2a.webhook': {
      projectId: string;
      taskId: string;
      configId: string;
      contentType: string;
      body: string;
      createdAt: number;
    };
  }
}

// Header values are echoed into callback requests: printable ASCII only, so a request never fails to build.
const HEADER_SAFE = /^[\x20-\x7e]*$/;
const AUTH_SCHEME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Checks a config (URL against the outbound policy, header-safe token and credentials) and gives it an id. */
async function checkPushConfig(
  ctx: PushConfigContext,
  taskId: string,
  input: PushConfigInput,
  version: ProtocolVersion,
): Promise<repo.StoredPushConfig> {
  if (input.token !== undefined && !HEADER_SAFE.test(input.token))
    throw invalidParams([{ field: 'token', description: 'must be printable ASCII' }]);
  const auth = input.authentication;
  if (auth && !AUTH_SCHEME.test(auth.scheme))
    throw invalidParams([
      { field: 'authentication.scheme', description: 'must be an HTTP authentication scheme name' },
    ]);
  if (auth?.credentials !== undefined && !HEADER_SAFE.test(auth.credentials))
    throw invalidParams([{ field: 'authentication.credentials', description: 'must be printable ASCII' }]);
  try {
    await resolveOutboundTarget(input.url, ctx.outbound, POST_PROTOCOLS);
  } catch (error) {
    if (error instanceof OutboundUrlRefused || error instanceof OutboundHostUnresolved) {
      throw invalidParams(
        [{ field: 'url', description: error.message }],
        `Push notification url refused: ${error.message}`,
      );
    }
    throw error;
  }
  return { ...input, id: input.id ?? newId(), taskId, projectId: ctx.projectId, protocolVersion: version };
}

/** A checked config ready to store (`storePushConfig`), its secrets sealed. */
export async function preparePushConfig(
  ctx: PushConfigContext,
  taskId: string,
  input: PushConfigInput,
  version: ProtocolVersion,
): Promise<repo.StoredPushConfig> {
  return sealSecrets(ctx.secrets, await checkPushConfig(ctx, taskId, input, version));
}

async function requireTask(ctx: PushConfigContext, taskId: string): Promise<void> {
  if (!(await findTask(ctx.db, ctx.projectId, taskId)))
    throw rpcError('TASK_NOT_FOUND', `Task ${taskId} not found`, { metadata: { taskId } });
}

export async function createPushConfig(
  ctx: PushConfigContext,
  taskId: string,
  input: PushConfigInput,
  version: ProtocolVersion,
): Promise<PushConfig> {
  await requireTask(ctx, taskId);
  const config = await checkPushConfig(ctx, taskId, input, version);
  await repo.upsertConfig(ctx.db, sealSecrets(ctx.secrets, config), ctx.clock.now());
  return config;
}

/** Without `id` (v0.3's deprecated form) the task's first config. Unknown config: -32001, as A2A says. */
export async function getPushConfig(
  ctx: PushConfigContext,
  taskId: string,
  id: string | undefined,
): Promise<PushConfig> {
  await requireTask(ctx, taskId);
  const config =
    id === undefined
      ? (await repo.listConfigs(ctx.db, ctx.projectId, taskId))[0]
      : await repo.findConfig(ctx.db, ctx.projectId, taskId, id);
  if (!config)
    throw rpcError('TASK_NOT_FOUND', `Push notification config ${id ?? ''} of task ${taskId} not found`, {
      metadata: { taskId },
    });
  return openSecrets(ctx.secrets, config);
}

export async function listPushConfigs(ctx: PushConfigContext, taskId: string): Promise<PushConfig[]> {
  await requireTask(ctx, taskId);
  return (await repo.listConfigs(ctx.db, ctx.projectId, taskId)).map((config) => openSecrets(ctx.secrets, config));
}

/** Idempotent: deleting a config that is gone is not an error (the task must exist). */
export async function deletePushConfig(ctx: PushConfigContext, taskId: string, id: string): Promise<void> {
  await requireTask(ctx, taskId);
  await repo.deleteConfig(ctx.db, ctx.projectId, taskId, id);
}

export const listTaskConfigs = (db: Db, projectId: string, taskId: string): Promise<repo.StoredPushConfig[]> =>
  repo.listConfigs(db, projectId, taskId);
export const storePushConfig = repo.upsertConfig;
/** A config with its secrets opened (callback delivery). */
export async function findStoredConfig(
  db: Db,
  secrets: SecretBoxSource,
  projectId: string,
  taskId: string,
  id: string,
): Promise<repo.StoredPushConfig | undefined> {
  const config = await repo.findConfig(db, projectId, taskId, id);
  return config && openSecrets(secrets, config);
}

/**
 * Queues one callback delivery per config for a status change, in the caller's transaction (the
 * delivery exists exactly when the change commits). The body is rendered now, in the config's
 * registration version: v1 `{"statusUpdate"}` or the v0.3 task (rule `a2a-webhooks`).
 */
export async function enqueueCallbacks(
  db: Db,
  clock: Clock,
  configs: repo.StoredPushConfig[],
  event: StatusUpdate,
  task: Task,
): Promise<void> {
  for (const config of configs) {
    const { contentType, body } = codecFor(config.protocolVersion).callback(event, task);
    const payload = {
      projectId: config.projectId,
      taskId: config.taskId,
      configId: config.id,
      contentType,
      body: JSON.stringify(body),
      createdAt: clock.now(),
    };
    await enqueueJob(db, 'a2a.webhook', payload, { maxAttempts: POST_MAX_ATTEMPTS, clock });
  }
}
