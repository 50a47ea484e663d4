import { Piscina } from 'piscina';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { RenderOutcome, RenderTask } from './render-batch.js';
import type { MessageTemplate, RenderScope, TemplateLimits } from './templates.js';

/** Renders campaign messages off the event loop. Made once per process (src/runtime.ts) and passed explicitly. */
export interface TemplateRenderer {
  /** `message` rendered for each scope, in order; a recipient over a budget gets a failed outcome, never an exception. */
  render(message: MessageTemplate, scopes: RenderScope[]): Promise<RenderOutcome[]>;
  close(): Promise<void>;
}

export interface TemplateRendererOptions {
  /** Worker threads (`TEMPLATE_WORKERS`). */
  workers: number;
  /** One recipient's render time (`TEMPLATE_RENDER_TIMEOUT_MS`). */
  renderTimeoutMs: number;
  /** A worker's heap (`TEMPLATE_MEMORY_LIMIT_MB`). */
  memoryLimitMb: number;
  /** One recipient's rendered fields (`TEMPLATE_OUTPUT_LIMIT_BYTES`). */
  outputLimitBytes: number;
  logger?: Logger | undefined;
  /** Start the workers now and keep them (a server); otherwise start them on first use and let idle ones go (tests, the CLI). */
  warm?: boolean | undefined;
}

/** Recipients per pool task at least: few round trips per batch, yet a batch spreads over the workers. */
const MIN_CHUNK = 25;

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

interface Watched {
  progress: Float64Array;
  controller: AbortController;
  stuck: boolean;
}

/**
 * A piscina pool of render workers. Budgets, first guard inside the worker: liquidjs's render-time
 * and allocation limits and a bounded output emitter, each failing only that recipient. Hard guard
 * outside: a watchdog aborts a task whose current recipient runs well past the time budget (the
 * worker is terminated and piscina starts a fresh one), and a worker over its heap limit dies
 * alone (`resourceLimits`). Either way the recipient it was on fails with the reason and the rest
 * of the task is rendered again by a healthy worker.
 */
export function createTemplateRenderer(options: TemplateRendererOptions): TemplateRenderer {
  const { filename, execArgv } = workerEntry();
  const pool = new Piscina<RenderTask, RenderOutcome[]>({
    filename,
    execArgv,
    // A worker takes a good part of a second to start (it loads tsx and liquidjs): a server starts them
    // at boot so the first fan-out does not wait.
    minThreads: options.warm ? options.workers : 0,
    maxThreads: options.workers,
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
  };
  const hardLimitMs = options.renderTimeoutMs * 2 + 100;
  const active = new Set<Watched>();
  let watchdog: NodeJS.Timeout | undefined;
  let closed = false;

  const watch = () => {
    const now = Date.now();
    for (const task of active) {
      if (!task.stuck && task.progress[0]! >= 0 && now - task.progress[1]! > hardLimitMs) {
        task.stuck = true;
        task.controller.abort();
      }
    }
  };
  const track = (task: Watched) => {
    active.add(task);
    watchdog ??= setInterval(watch, Math.max(5, Math.min(50, Math.floor(options.renderTimeoutMs / 4))));
    watchdog.unref();
  };
  const untrack = (task: Watched) => {
    active.delete(task);
    if (active.size === 0 && watchdog) {
      clearInterval(watchdog);
      watchdog = undefined;
    }
  };

  const runChunk = async (message: MessageTemplate, scopes: RenderScope[]): Promise<RenderOutcome[]> => {
    if (scopes.length === 0) return [];
    const task: Watched = {
      progress: new Float64Array(new SharedArrayBuffer(16)),
      controller: new AbortController(),
      stuck: false,
    };
    task.progress[0] = -1;
    track(task);
    try {
      return await pool.run({ message, scopes, limits, progress: task.progress }, { signal: task.controller.signal });
    } catch (error) {
      const at = task.progress[0];
      const outOfMemory = (error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY';
      if (closed || at < 0 || (!task.stuck && !outOfMemory)) throw error;
      options.logger?.warn(
        { reason: task.stuck ? 'timeout' : 'memory', recipients: scopes.length },
        'a template render worker was stopped; it is replaced',
      );
      const failed: RenderOutcome = task.stuck
        ? {
            ok: false,
            reason: 'TEMPLATE_RENDER_TIMEOUT',
            detail: `rendering ran past its time budget of ${options.renderTimeoutMs} ms and was stopped`,
          }
        : {
            ok: false,
            reason: 'TEMPLATE_MEMORY_EXCEEDED',
            detail: `rendering ran out of its ${options.memoryLimitMb} MB memory budget`,
          };
      const [before, after] = await Promise.all([
        runChunk(message, scopes.slice(0, at)),
        runChunk(message, scopes.slice(at + 1)),
      ]);
      return [...before, failed, ...after];
    } finally {
      untrack(task);
    }
  };

  return {
    async render(message, scopes) {
      if (closed) throw new Error('the template renderer is closed');
      const size = Math.max(MIN_CHUNK, Math.ceil(scopes.length / options.workers));
      const chunks: RenderScope[][] = [];
      for (let i = 0; i < scopes.length; i += size) chunks.push(scopes.slice(i, i + size));
      return (await Promise.all(chunks.map((chunk) => runChunk(message, chunk)))).flat();
    },
    async close() {
      if (closed) return;
      closed = true;
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
    logger,
    warm: options.warm,
  });
}
