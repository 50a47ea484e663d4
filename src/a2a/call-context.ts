import type { LogFn } from 'pino';
import type { AppDeps } from '../app.js';
import { secretBoxFor } from './push-configs/push-config-secrets.js';
import type { PushConfigContext } from './push-configs/push-configs.service.js';
import type { TaskEventBus } from './tasks/task-events.js';
import type { WriteBatcher } from '../db/write-batcher.js';
import type { RunContext } from './tasks/task-runner.js';
import type { StoreContext } from './tasks/task-store.js';
import type { Codec } from './versions/codec.js';

/** One authenticated JSON-RPC call: who calls (the key's project), in which protocol version. */
export interface CallContext {
  deps: AppDeps;
  events: TaskEventBus;
  writes: WriteBatcher;
  projectId: string;
  codec: Codec;
  logger: { info: LogFn; warn: LogFn; error: LogFn };
  /** `X-Service-Idempotency-Key`, when sent. */
  idempotencyKey?: string;
  /** Where `/a2a` is reachable, for the extended card. */
  endpointUrl: string;
}

export const storeContext = (call: CallContext): StoreContext => ({
  db: call.deps.db,
  writes: call.writes,
  clock: call.deps.clock,
  events: call.events,
  projectId: call.projectId,
});

export const runContext = (call: CallContext): RunContext => ({
  ...storeContext(call),
  skill: { deps: call.deps, db: call.deps.db, projectId: call.projectId },
  logger: call.logger,
});

export const pushContext = (call: CallContext): PushConfigContext => ({
  db: call.deps.db,
  clock: call.deps.clock,
  projectId: call.projectId,
  outbound: { allowPrivateNetworks: call.deps.config.outboundAllowPrivateNetworks },
  secrets: secretBoxFor(call.deps.config, call.deps.dialect),
});
