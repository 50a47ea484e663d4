import { Piscina } from 'piscina';
import type { Logger } from 'pino';
import { LRUCache } from 'lru-cache';
import type { Config } from '../../config.js';
import { newStrikes, type RenderOutcome, type RenderChunk } from './render-chunk.js';
import { createRenderScheduler } from './render-scheduler.js';
import type { FilterCaps } from './template-guards.js';
import type { MessageTemplate, RenderScope, TemplateLimits } from './templates.js';

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

/** Triggers whose record is kept (the most recently used ones). */
const TRIGGERS_REMEMBERED = 1024;

/**
 * The sources are TypeScript that Node strips itself; a worker thread does not inherit the module
 * hooks of its parent, so it registers the `.js`-to-`.ts` resolve hook (src/boot/ts-resolve.ts) itself.
 * piscina loads the entry with `require()` and falls back to `import()`. Node 22 and 24 abort the
 * whole process when a worker is terminated (the watchdog, `close()`) inside `require()` of an ES
 * module; without require of ES modules in the worker, the `import()` that is used instead stops
 * cleanly (test/campaigns/render-worker-entry.test.ts).
 */
export function renderWorkerEntry(): { filename: string; execArgv: string[] } {
  const typescript = import.meta.url.endsWith('.ts');
  const filename = new URL(`./render-worker.${typescript ? 'ts' : 'js'}`, import.meta.url).href;
  // A profiled process (`--cpu-prof`, bench:campaign --profile) profiles its render workers too.
  const profiling = process.execArgv.filter(
    (a, i, all) => a.startsWith('--cpu-prof') || all[i - 1] === '--cpu-prof-dir',
  );
  const loading = ['--no-experimental-require-module'];
  if (!typescript) return { filename, execArgv: [...loading, ...profiling] };
  const resolveHook = new URL('../../boot/ts-resolve.ts', import.meta.url).href;
  return { filename, execArgv: [...loading, '--import', resolveHook, ...profiling] };
}

/**
 * A piscina pool of render workers with Herald's own scheduling in front of it (piscina's queue
 * stays empty). Fairness: interactive renders go first and batches may take all workers but one, so
 * a preview never waits behind a trigger (with one worker it waits for one recipient at most);
 * projects take turns in each lane, and a chunk of one project that has run `QUANTUM_MS` makes room
 * before its next recipient once another project waits, so no project delays another's renders by
 * more than one recipient's budget. Budgets, first guard inside the worker: liquidjs's limits, the
 * filter guards and a bounded output, each failing only that recipient. Hard guard outside: a
 * watchdog terminates a worker whose recipient is still running a tenth past its budget (the budget
 * is a tenth once the trigger overran `REDUCED_AFTER_OVERRUNS` times, read as it happens), and a
 * worker over its heap limit dies alone (`resourceLimits`); piscina replaces either (one standby
 * worker takes the next chunk meanwhile). The recipient it was on fails with the reason and the rest
 * of the chunk is queued again. After `timeoutsPerTrigger` overruns (at least one in a hundred of
 * its renders) the rest of the trigger is skipped unrendered.
 */
export function createTemplateRenderer(options: TemplateRendererOptions): TemplateRenderer {
  const { filename, execArgv } = renderWorkerEntry();
  const workers = options.workers;
  const pool = new Piscina<RenderChunk, RenderOutcome[]>({
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
  // A worker that dies between chunks (e.g. its heap filled after the last render returned) is replaced
  // by piscina; the event only needs to be heard, or it would crash the process as an unhandled 'error'.
  pool.on('error', (error: unknown) =>
    options.logger?.warn({ err: error }, 'a template render worker died between chunks; it is replaced'),
  );
  const limits: TemplateLimits = {
    renderTimeoutMs: options.renderTimeoutMs,
    // liquidjs counts the characters and array elements it allocates (a sum, not what is live); an
    // element costs 8+ bytes, so a sixteenth of the heap in those units stays well inside it.
    memoryLimit: Math.floor((options.memoryLimitMb * 1024 * 1024) / 16),
    outputLimitBytes: options.outputLimitBytes,
    filterCaps: options.filterCaps,
  };
  const scheduler = createRenderScheduler({
    workers: options.workers,
    limits,
    maxOverruns: options.timeoutsPerTrigger,
    memoryLimitMb: options.memoryLimitMb,
    run: (chunk, signal) => pool.run(chunk, { signal }),
    logger: options.logger,
  });
  // Each trigger's record, shared with the workers rendering it (and kept for the most recent triggers).
  const strikesOf = new LRUCache<string, Int32Array>({ max: TRIGGERS_REMEMBERED });
  const strikesFor = (triggerId: string | undefined): Int32Array => {
    const existing = triggerId === undefined ? undefined : strikesOf.get(triggerId);
    if (existing) return existing;
    const strikes = newStrikes();
    if (triggerId !== undefined) strikesOf.set(triggerId, strikes);
    return strikes;
  };
  let closed = false;

  return {
    render(message, scopes, request) {
      return scheduler.schedule({
        message,
        scopes,
        projectId: request.projectId,
        interactive: request.interactive === true,
        strikes: strikesFor(request.triggerId),
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      scheduler.close();
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
