import { Piscina } from 'piscina';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { Control, notRendered, REDUCED_AFTER_OVERRUNS, reducedBudgetMs } from './render-batch.js';
import type { RenderOutcome, RenderTask } from './render-batch.js';
import { FairQueue } from './render-queue.js';
import type { FilterCaps } from './template-guards.js';
import { timeoutDetail, type MessageTemplate, type RenderScope, type TemplateLimits } from './templates.js';

/** Who a render is for: the pool serves projects in turn, and interactive renders first. */
export interface RenderRequest {
  projectId: string;
  /** Someone waits for it (a preview, a dry run): never queued behind a trigger's batches. */
  interactive?: boolean;
  /** Renders of one trigger share its strike budget; without it, one call has its own. */
  triggerId?: string;
}

/** Renders campaign messages off the event loop. Made once per process (src/herald.ts) and passed explicitly. */
export interface TemplateRenderer {
  /** `message` rendered for each scope, in order; a recipient over a budget gets a failed outcome, never an exception. */
  render(message: MessageTemplate, scopes: RenderScope[], request: RenderRequest): Promise<RenderOutcome[]>;
  close(): Promise<void>;
}

export interface TemplateRendererOptions {
  /** Renders at once (`TEMPLATE_WORKERS`); a batch takes at most all but one of them. */
  workers: number;
  /** One recipient's render time (`TEMPLATE_RENDER_TIMEOUT_MS`). */
  renderTimeoutMs: number;
  /** A worker's heap (`TEMPLATE_MEMORY_LIMIT_MB`). */
  memoryLimitMb: number;
  /** One recipient's rendered fields (`TEMPLATE_OUTPUT_LIMIT_BYTES`). */
  outputLimitBytes: number;
  /** Time-budget overruns after which the rest of a trigger is skipped unrendered (`TEMPLATE_TIMEOUTS_PER_TRIGGER`). */
  timeoutsPerTrigger: number;
  /** What one filter call may be given (default `DEFAULT_FILTER_CAPS`; raised only by tests of the watchdog). */
  filterCaps?: FilterCaps | undefined;
  logger?: Logger | undefined;
  /** Start the workers now and keep them (a server); otherwise start them on first use and let idle ones go (tests, the CLI). */
  warm?: boolean | undefined;
}

/** Recipients per pool task: few round trips per batch, yet a batch spreads over the workers. */
const MIN_CHUNK = 25;
const MAX_CHUNK = 250;
/** How long a task runs before it makes room for another project's waiting task. */
const QUANTUM_MS = 10;
/** Triggers whose overruns are remembered (the most recent ones). */
const TRIGGERS_REMEMBERED = 1024;

/**
 * The sources are TypeScript that Node strips itself; a worker thread does not inherit the module
 * hooks of its parent, so it registers the `.js`-to-`.ts` resolve hook (src/boot/ts-resolve.ts) itself.
 */
function workerEntry(): { filename: string; execArgv: string[] } {
  const typescript = import.meta.url.endsWith('.ts');
  const filename = new URL(`./render-worker.${typescript ? 'ts' : 'js'}`, import.meta.url).href;
  // A profiled process (`--cpu-prof`, bench:campaign --profile) profiles its render workers too.
  const profiling = process.execArgv.filter(
    (a, i, all) => a.startsWith('--cpu-prof') || all[i - 1] === '--cpu-prof-dir',
  );
  if (!typescript) return { filename, execArgv: profiling };
  return { filename, execArgv: ['--import', new URL('../boot/ts-resolve.ts', import.meta.url).href, ...profiling] };
}

interface Call {
  message: MessageTemplate;
  scopes: RenderScope[];
  outcomes: RenderOutcome[];
  left: number;
  overruns: Int32Array;
  settled: boolean;
  resolve(outcomes: RenderOutcome[]): void;
  reject(error: unknown): void;
}

/** Some recipients of a call, queued or running as one pool task. */
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

const sharedFloats = (n: number) => new Float64Array(new SharedArrayBuffer(8 * n));
const sharedCounter = () => new Int32Array(new SharedArrayBuffer(4));

/**
 * A piscina pool of render workers with Herald's own scheduling in front of it (piscina's queue
 * stays empty). Fairness: interactive renders go first and batches may take all workers but one, so
 * a preview never waits behind a trigger (with one worker it waits for one recipient at most);
 * projects take turns in each lane, and a task of one project that has run `QUANTUM_MS` makes room
 * before its next recipient once another project waits, so no project delays another's renders by
 * more than one recipient's budget. Budgets, first guard inside the worker: liquidjs's limits, the
 * filter guards and a bounded output, each failing only that recipient. Hard guard outside: a
 * watchdog terminates a worker whose recipient is still running a tick past its budget (a tenth of
 * it once the trigger overran `REDUCED_AFTER_OVERRUNS` times, which it reads as it happens), and a
 * worker over its heap limit dies alone (`resourceLimits`); piscina replaces either (one standby
 * worker takes the next task meanwhile). The recipient it was on fails with the reason and the rest
 * of the task is queued again. After `timeoutsPerTrigger` overruns the rest of the trigger is
 * skipped unrendered.
 */
export function createTemplateRenderer(options: TemplateRendererOptions): TemplateRenderer {
  const { filename, execArgv } = workerEntry();
  const workers = options.workers;
  const batchSlots = Math.max(1, workers - 1);
  const pool = new Piscina<RenderTask, RenderOutcome[]>({
    filename,
    execArgv,
    // A worker takes a good part of a second to start (it loads liquidjs under the resolve hook): a
    // server starts them at boot, plus one standby so that replacing a stopped worker delays nobody.
    minThreads: options.warm ? workers + 1 : 0,
    maxThreads: workers + 1,
    idleTimeout: 30_000,
    resourceLimits: {
      maxOldGenerationSizeMb: options.memoryLimitMb,
      maxYoungGenerationSizeMb: Math.max(1, Math.min(16, Math.floor(options.memoryLimitMb / 4))),
      stackSizeMb: 4,
    },
  });
  // A worker that dies between tasks (e.g. its heap filled after the last render returned) is replaced
  // by piscina; the event only needs to be heard, or it would crash the process as an unhandled 'error'.
  pool.on('error', (error: unknown) =>
    options.logger?.warn({ err: error }, 'a template render worker died between tasks; it is replaced'),
  );
  const limits: TemplateLimits = {
    renderTimeoutMs: options.renderTimeoutMs,
    // liquidjs counts the characters and array elements it allocates (a sum, not what is live); an
    // element costs 8+ bytes, so a sixteenth of the heap in those units stays well inside it.
    memoryLimit: Math.floor((options.memoryLimitMb * 1024 * 1024) / 16),
    outputLimitBytes: options.outputLimitBytes,
    filterCaps: options.filterCaps,
  };
  const maxOverruns = options.timeoutsPerTrigger;
  // The watchdog's period, and the grace past a budget before it stops a worker.
  const tickMs = Math.max(2, Math.min(10, Math.floor(options.renderTimeoutMs / 20)));
  const queue = new FairQueue<Chunk>();
  const running = new Set<Running>();
  const overrunsOf = new Map<string, Int32Array>();
  let watchdog: NodeJS.Timeout | undefined;
  let closed = false;

  const overrunsFor = (triggerId: string | undefined): Int32Array => {
    if (triggerId === undefined) return sharedCounter();
    let counter = overrunsOf.get(triggerId);
    if (!counter) {
      counter = sharedCounter();
      if (overrunsOf.size >= TRIGGERS_REMEMBERED) overrunsOf.delete(overrunsOf.keys().next().value!);
      overrunsOf.set(triggerId, counter);
    }
    return counter;
  };

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
    for (const task of running) {
      const { control } = task;
      const index = control[Control.index]!;
      if (task.stoppedAtMs !== undefined || index < 0) continue;
      let budget = control[Control.budgetMs]!;
      // The tenth of the budget applies at once, also to a recipient that started with the whole of it.
      if (Atomics.load(task.chunk.call.overruns, 0) >= REDUCED_AFTER_OVERRUNS)
        budget = Math.min(budget, reducedBudgetMs(options.renderTimeoutMs));
      if (now - control[Control.startedAt]! <= budget + tickMs || control[Control.index] !== index) continue;
      task.stoppedAtMs = budget;
      Atomics.add(task.chunk.call.overruns, 0, 1);
      task.controller.abort();
    }
  };

  /** Asks running tasks to make room for what waits: batches at once for an interactive render, others after their quantum. */
  const makeRoom = () => {
    const interactiveWaiting = queue.waiting(true);
    const batchWaiting = queue.waiting(false);
    const othersWait = (waiting: ReadonlySet<string>, projectId: string) =>
      waiting.size > 1 || (waiting.size === 1 && !waiting.has(projectId));
    for (const task of running) {
      const { projectId, interactive } = task.chunk;
      let at = Number.POSITIVE_INFINITY;
      if (!interactive && interactiveWaiting.size > 0) at = 0;
      else if (othersWait(interactive ? interactiveWaiting : batchWaiting, projectId)) at = task.startedAt + QUANTUM_MS;
      if (at < task.control[Control.yieldAt]!) task.control[Control.yieldAt] = at;
    }
  };

  const start = (chunk: Chunk) => {
    const { call, indexes } = chunk;
    const control = sharedFloats(Control.size);
    control[Control.index] = -1;
    control[Control.yieldAt] = Number.POSITIVE_INFINITY;
    const task: Running = { chunk, control, controller: new AbortController(), startedAt: Date.now() };
    running.add(task);
    watchdog ??= setInterval(watch, tickMs).unref();
    const payload: RenderTask = {
      message: call.message,
      scopes: indexes.map((i) => call.scopes[i]!),
      limits,
      control,
      overruns: call.overruns,
      maxOverruns,
    };
    pool.run(payload, { signal: task.controller.signal }).then(
      (outcomes) => {
        record(call, indexes, outcomes);
        if (outcomes.length < indexes.length) queue.push({ ...chunk, indexes: indexes.slice(outcomes.length) }, true);
        finish(task);
      },
      (error: unknown) => {
        const at = control[Control.index]!;
        const outOfMemory = (error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY';
        const stoppedAtMs = task.stoppedAtMs;
        if (closed || at < 0 || (stoppedAtMs === undefined && !outOfMemory)) fail(call, error);
        else {
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
          if (rest.length > 0) queue.push({ ...chunk, indexes: rest }, true);
        }
        finish(task);
      },
    );
  };

  const finish = (task: Running) => {
    running.delete(task);
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
      for (const task of running) if (!task.chunk.interactive) batches++;
      const chunk = queue.shift(batches < batchSlots);
      if (!chunk) break;
      const { call } = chunk;
      if (call.settled) continue;
      if (Atomics.load(call.overruns, 0) >= maxOverruns)
        record(
          call,
          chunk.indexes,
          chunk.indexes.map(() => notRendered(maxOverruns)),
        );
      else start(chunk);
    }
    if (queue.size > 0) makeRoom();
  }

  return {
    render(message, scopes, request) {
      if (closed) return Promise.reject(new Error('the template renderer is closed'));
      if (scopes.length === 0) return Promise.resolve([]);
      const interactive = request.interactive === true;
      return new Promise<RenderOutcome[]>((resolve, reject) => {
        const call: Call = {
          message,
          scopes,
          outcomes: new Array<RenderOutcome>(scopes.length),
          left: scopes.length,
          overruns: overrunsFor(request.triggerId),
          settled: false,
          resolve,
          reject,
        };
        const slots = interactive ? workers : batchSlots;
        const size = Math.min(MAX_CHUNK, Math.max(MIN_CHUNK, Math.ceil(scopes.length / slots)));
        for (let i = 0; i < scopes.length; i += size) {
          const indexes = Array.from({ length: Math.min(size, scopes.length - i) }, (_, j) => i + j);
          queue.push({ call, indexes, projectId: request.projectId, interactive });
        }
        dispatch();
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const chunk of queue.drain()) fail(chunk.call, new Error('the template renderer is closed'));
      await pool.destroy();
    },
  };
}

/** The renderer with the operator's settings (`TEMPLATE_*`). */
export function createConfiguredTemplateRenderer(
  config: Config,
  logger?: Logger,
  options: { warm?: boolean } = {},
): TemplateRenderer {
  return createTemplateRenderer({
    workers: config.templateWorkers,
    renderTimeoutMs: config.templateRenderTimeoutMs,
    memoryLimitMb: config.templateMemoryLimitMb,
    outputLimitBytes: config.templateOutputLimitBytes,
    timeoutsPerTrigger: config.templateTimeoutsPerTrigger,
    logger,
    warm: options.warm,
  });
}
