import type { Logger } from 'pino';
import {
  Control,
  notRendered,
  overranOften,
  REDUCED_AFTER_OVERRUNS,
  reducedBudgetMs,
  Strikes,
} from './render-chunk.js';
import type { RenderOutcome, RenderChunk } from './render-chunk.js';
import { FairQueue } from './render-queue.js';
import { timeoutDetail, type MessageTemplate, type RenderScope, type TemplateLimits } from './templates.js';

/** Recipients per chunk: few round trips per batch, yet a batch spreads over the workers. */
const MIN_CHUNK = 25;
const MAX_CHUNK = 250;
/** How long a chunk runs before it makes room for another project's waiting chunk. */
export const QUANTUM_MS = 10;

export interface RenderSchedulerOptions {
  /** Chunks running at once; batches take at most all but one. */
  workers: number;
  limits: TemplateLimits;
  /** Overruns of a trigger after which the rest is skipped unrendered. */
  maxOverruns: number;
  memoryLimitMb: number;
  /** Runs a chunk in a worker thread; aborting `signal` terminates that worker (piscina). */
  run(chunk: RenderChunk, signal: AbortSignal): Promise<RenderOutcome[]>;
  logger?: Logger | undefined;
}

/** One `render` call: its recipients, who it is for, and its trigger's record (shared with the workers, `Strikes`). */
export interface RenderCall {
  message: MessageTemplate;
  scopes: RenderScope[];
  projectId: string;
  interactive: boolean;
  strikes: Int32Array;
}

interface Call extends RenderCall {
  outcomes: RenderOutcome[];
  left: number;
  settled: boolean;
  resolve(outcomes: RenderOutcome[]): void;
  reject(error: unknown): void;
}

/** Some recipients of a call, queued or running together in one worker. */
interface Chunk {
  call: Call;
  indexes: number[];
  projectId: string;
  interactive: boolean;
}

interface Running {
  chunk: Chunk;
  control: Float64Array;
  controller: AbortController;
  startedAt: number;
  /** The budget (ms) the watchdog stopped its recipient at, if it did. */
  stoppedAtMs?: number;
}

/**
 * Decides what runs in the render workers, and watches it (see `createTemplateRenderer`): a fair
 * queue in front of the pool, a chunk per free worker, room made for what waits, a watchdog.
 */
export function createRenderScheduler(options: RenderSchedulerOptions) {
  const { workers, limits, maxOverruns } = options;
  const batchSlots = Math.max(1, workers - 1);
  // The watchdog's period, and its grace past a recipient's budget (the reduced one included) before it
  // stops the worker: a quarter of the full budget, so a worker that stops itself at its deadline (after
  // one capped step of a few ms, several times that on a machine short of CPU) is not replaced for
  // being late; a replacement costs a worker start.
  const tickMs = Math.max(2, Math.min(10, Math.floor(limits.renderTimeoutMs / 20)));
  const graceMs = Math.max(tickMs, Math.floor(limits.renderTimeoutMs / 4));
  const queue = new FairQueue<Chunk>();
  const running = new Set<Running>();
  let watchdog: NodeJS.Timeout | undefined;
  let closed = false;

  const record = (call: Call, indexes: number[], outcomes: RenderOutcome[]) => {
    outcomes.forEach((outcome, j) => (call.outcomes[indexes[j]!] = outcome));
    call.left -= outcomes.length;
    if (call.left === 0 && !call.settled) {
      call.settled = true;
      call.resolve(call.outcomes);
    }
  };
  const fail = (call: Call, error: unknown) => {
    if (call.settled) return;
    call.settled = true;
    call.reject(error);
  };

  const watch = () => {
    const now = Date.now();
    for (const inFlight of running) {
      const { control } = inFlight;
      const index = control[Control.index]!;
      if (inFlight.stoppedAtMs !== undefined || index < 0) continue;
      let budget = control[Control.budgetMs]!;
      // The tenth of the budget applies at once, also to a recipient that started with the whole of it.
      if (overranOften(inFlight.chunk.call.strikes, REDUCED_AFTER_OVERRUNS))
        budget = Math.min(budget, reducedBudgetMs(limits.renderTimeoutMs));
      if (now - control[Control.startedAt]! <= budget + graceMs || control[Control.index] !== index) continue;
      inFlight.stoppedAtMs = budget;
      Atomics.add(inFlight.chunk.call.strikes, Strikes.overruns, 1);
      inFlight.controller.abort();
    }
  };

  /** Asks running chunks to make room for what waits: batches at once for an interactive render, others after their quantum. */
  const makeRoom = () => {
    const interactiveWaiting = queue.waiting(true);
    const batchWaiting = queue.waiting(false);
    const othersWait = (waiting: ReadonlySet<string>, projectId: string) =>
      waiting.size > 1 || (waiting.size === 1 && !waiting.has(projectId));
    for (const inFlight of running) {
      const { projectId, interactive } = inFlight.chunk;
      let at = Number.POSITIVE_INFINITY;
      if (!interactive && interactiveWaiting.size > 0) at = 0;
      else if (othersWait(interactive ? interactiveWaiting : batchWaiting, projectId))
        at = inFlight.startedAt + QUANTUM_MS;
      if (at < inFlight.control[Control.yieldAt]!) inFlight.control[Control.yieldAt] = at;
    }
  };

  /** The recipient a stopped or dead worker was on fails with the reason; the rest of its chunk is queued again. */
  const salvage = (inFlight: Running, error: unknown) => {
    const { call, indexes } = inFlight.chunk;
    const at = inFlight.control[Control.index]!;
    const outOfMemory = (error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY';
    const { stoppedAtMs } = inFlight;
    if (closed || at < 0 || (stoppedAtMs === undefined && !outOfMemory)) return fail(call, error);
    options.logger?.warn(
      { reason: stoppedAtMs === undefined ? 'memory' : 'timeout', recipients: indexes.length },
      'a template render worker was stopped; it is replaced',
    );
    const failed: RenderOutcome =
      stoppedAtMs !== undefined
        ? { ok: false, reason: 'TEMPLATE_RENDER_TIMEOUT', detail: timeoutDetail(stoppedAtMs) }
        : {
            ok: false,
            reason: 'TEMPLATE_MEMORY_EXCEEDED',
            detail: `rendering ran out of its ${options.memoryLimitMb} MB memory budget`,
          };
    record(call, [indexes[at]!], [failed]);
    const rest = indexes.filter((_, j) => j !== at);
    if (rest.length > 0) queue.push({ ...inFlight.chunk, indexes: rest }, true);
  };

  const start = (chunk: Chunk) => {
    const { call, indexes } = chunk;
    const control = new Float64Array(new SharedArrayBuffer(8 * Control.size));
    control[Control.index] = -1;
    control[Control.yieldAt] = Number.POSITIVE_INFINITY;
    const inFlight: Running = { chunk, control, controller: new AbortController(), startedAt: Date.now() };
    running.add(inFlight);
    watchdog ??= setInterval(watch, tickMs).unref();
    const payload: RenderChunk = {
      message: call.message,
      scopes: indexes.map((i) => call.scopes[i]!),
      limits,
      control,
      strikes: call.strikes,
      maxOverruns,
    };
    options.run(payload, inFlight.controller.signal).then(
      (outcomes) => {
        record(call, indexes, outcomes);
        if (outcomes.length < indexes.length) queue.push({ ...chunk, indexes: indexes.slice(outcomes.length) }, true);
        finish(inFlight);
      },
      (error: unknown) => {
        salvage(inFlight, error);
        finish(inFlight);
      },
    );
  };

  const finish = (inFlight: Running) => {
    running.delete(inFlight);
    if (running.size === 0 && watchdog) {
      clearInterval(watchdog);
      watchdog = undefined;
    }
    dispatch();
  };

  function dispatch(): void {
    if (closed) return;
    while (running.size < workers) {
      let batches = 0;
      for (const inFlight of running) if (!inFlight.chunk.interactive) batches++;
      const chunk = queue.shift(batches < batchSlots);
      if (!chunk) break;
      const { call, indexes } = chunk;
      if (call.settled) continue;
      // A trigger out of strikes: its recipients are skipped here, without a worker.
      if (overranOften(call.strikes, maxOverruns))
        record(
          call,
          indexes,
          indexes.map(() => notRendered(maxOverruns)),
        );
      else start(chunk);
    }
    if (queue.size > 0) makeRoom();
  }

  return {
    /** Queues the call's recipients in chunks (spread over the workers its lane may take); its outcomes in order. */
    schedule(request: RenderCall): Promise<RenderOutcome[]> {
      if (closed) return Promise.reject(new Error('the template renderer is closed'));
      if (request.scopes.length === 0) return Promise.resolve([]);
      const n = request.scopes.length;
      return new Promise<RenderOutcome[]>((resolve, reject) => {
        const call: Call = {
          ...request,
          outcomes: new Array<RenderOutcome>(n),
          left: n,
          settled: false,
          resolve,
          reject,
        };
        const slots = request.interactive ? workers : batchSlots;
        const size = Math.min(MAX_CHUNK, Math.max(MIN_CHUNK, Math.ceil(n / slots)));
        for (let i = 0; i < n; i += size) {
          const indexes = Array.from({ length: Math.min(size, n - i) }, (_, j) => i + j);
          queue.push({ call, indexes, projectId: request.projectId, interactive: request.interactive });
        }
        dispatch();
      });
    },
    /** Fails what waits; what runs fails as the pool is destroyed. */
    close(): void {
      closed = true;
      for (const chunk of queue.drain()) fail(chunk.call, new Error('the template renderer is closed'));
    },
  };
}
