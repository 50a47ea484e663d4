import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { LogFn, Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { WriteCommitter } from '../db/group-commit.js';
import type { OutboundPolicy } from '../lib/outbound-url-policy.js';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';
import type { SecretBoxSource } from './push-configs/push-config-secrets.js';
import type { PushConfigContext } from './push-configs/push-configs.service.js';
import type { SkillDeps } from './skills/skill.js';
import type { StatusUpdateBus } from './tasks/status-updates.js';
import type { RunContext } from './tasks/task-runner.js';
import type { StoreContext } from './tasks/task-store.js';
import type { TaskWrites } from './tasks/task-writes.js';
import type { Codec } from './versions/codec.js';

/** What the agent interface needs (src/herald.ts gives it); the skills' own dependencies included. */
export interface A2aDeps extends SkillDeps {
  config: Pick<Config, 'publicUrl' | 'bodyLimitBytes' | 'jobPollIntervalMs'>;
  db: Kysely<Database>;
  logger: Logger;
  /** Task writes share commits on the embedded database. */
  writes: WriteCommitter;
  /** A task stored by its skill's write's statement (PostgreSQL; shared under load). */
  taskWrites: TaskWrites;
  /** PostgreSQL: task status updates reach other instances over NOTIFY on this pool. */
  pgPool?: pg.Pool | undefined;
  /** PostgreSQL: where they are LISTENed for; absent (behind a pooler) streams poll their task instead. */
  listenPool?: pg.Pool | undefined;
  rateLimiter: RateLimiter;
  /** Seals push configs' secrets. */
  secretBox: SecretBoxSource;
  /** Callback URLs are tenant URLs. */
  outbound: OutboundPolicy;
}

/** One authenticated JSON-RPC call: who calls (the key's project), in which protocol version. */
export interface CallContext {
  deps: A2aDeps;
  updates: StatusUpdateBus;
  writes: WriteCommitter;
  projectId: string;
  codec: Codec;
  logger: { info: LogFn; warn: LogFn; error: LogFn };
  /** `X-Service-Idempotency-Key`, when sent. */
  idempotencyKey?: string;
  /** Where `/a2a` is reachable, for the extended card (built only when asked for). */
  endpointUrl(): string;
}

export const storeContext = (call: CallContext): StoreContext => ({
  db: call.deps.db,
  writes: call.writes,
  clock: call.deps.clock,
  updates: call.updates,
  projectId: call.projectId,
});

export const runContext = (call: CallContext): RunContext => ({
  ...storeContext(call),
  skill: { deps: call.deps, db: call.deps.db, projectId: call.projectId },
  taskWrites: call.deps.taskWrites,
  logger: call.logger,
});

export const pushContext = (call: CallContext): PushConfigContext => ({
  db: call.deps.db,
  clock: call.deps.clock,
  projectId: call.projectId,
  outbound: call.deps.outbound,
  secrets: call.deps.secretBox,
});
