import { LRUCache } from 'lru-cache';
import type { PushMessage } from '../push/push.types.js';
import {
  parseMessageTemplate,
  RenderFailure,
  renderMessage,
  type MessageTemplate,
  type ParsedMessage,
  type RenderFailureReason,
  type RenderScope,
  type TemplateLimits,
} from './templates.js';

/**
 * What a running task shares with the pool (a `Float64Array` on a `SharedArrayBuffer`), read and
 * written without waiting for the task to return.
 */
export const Control = {
  /** Index (in the task) of the recipient being rendered; -1 before the first. Written by the worker. */
  index: 0,
  /** When that recipient's render started (epoch ms). Written by the worker. */
  startedAt: 1,
  /** Time budget (ms) that recipient renders with. Written by the worker. */
  budgetMs: 2,
  /** Epoch ms after which the worker returns before its next recipient (`Infinity`: never). Written by the pool. */
  yieldAt: 3,
  size: 4,
} as const;

/** One pool task: a message and the recipients to render it for. */
export interface RenderTask {
  message: MessageTemplate;
  scopes: RenderScope[];
  limits: TemplateLimits;
  /** Shared with the pool: see `Control`. */
  control: Float64Array;
  /** The trigger's record, shared by every task of it (see `Strikes`). */
  strikes: Int32Array;
  /** Overruns after which the rest of the trigger is not rendered (`TEMPLATE_TIMEOUTS_PER_TRIGGER`). */
  maxOverruns: number;
}

export type RenderOutcome =
  { ok: true; message: PushMessage } | { ok: false; reason: RenderFailureReason; detail: string };

/**
 * A trigger's record (an `Int32Array` on a `SharedArrayBuffer`), shared by every task rendering it
 * and the pool's watchdog, read and written as it happens (`Atomics`).
 */
export const Strikes = {
  /** Its recipients stopped on the time budget. */
  overruns: 0,
  /** Its renders started. */
  renders: 1,
  size: 2,
} as const;

export const newStrikes = () => new Int32Array(new SharedArrayBuffer(4 * Strikes.size));

/**
 * At least `count` overruns, and at least one in a hundred of the trigger's renders: a template that
 * runs out of time is so for most recipients, while a trigger of ordinary messages whose few renders
 * came late on a machine short of CPU must not lose the rest of its audience.
 */
export function overranOften(strikes: Int32Array, count: number): boolean {
  const overruns = Atomics.load(strikes, Strikes.overruns);
  return overruns >= count && overruns * 100 >= Atomics.load(strikes, Strikes.renders);
}

/**
 * Overruns of a trigger after which its renders get a tenth of the time budget (at least 10 ms): an
 * ordinary message renders in microseconds and still fits, while a template that keeps running out
 * of time holds a worker for a tenth as long per recipient until the strike budget stops it.
 */
export const REDUCED_AFTER_OVERRUNS = 3;
export const reducedBudgetMs = (budgetMs: number) => Math.max(10, Math.floor(budgetMs / 10));

/** The outcome of a recipient skipped because its trigger spent its strike budget. */
export const notRendered = (maxOverruns: number): RenderOutcome => ({
  ok: false,
  reason: 'TEMPLATE_RENDER_TIMEOUT',
  detail: `not rendered: ${maxOverruns} renders of this trigger ran past their time budget`,
});

const parsedCache = new LRUCache<string, ParsedMessage>({ max: 64 });

function parsedFor(message: MessageTemplate): ParsedMessage {
  const key = JSON.stringify(message);
  let parsed = parsedCache.get(key);
  if (!parsed) {
    parsed = parseMessageTemplate(message);
    parsedCache.set(key, parsed);
  }
  return parsed;
}

/**
 * Renders a task's recipients in order; runs inside a render worker. Returns early, with the
 * outcomes of the recipients done so far, when the pool asks it to make room for another project
 * (`yieldAt`) and after a recipient overran its time budget (so a later termination of this worker
 * never loses an overrun already counted); the pool queues the rest again.
 */
export function renderBatch(task: RenderTask): RenderOutcome[] {
  const { control, strikes, maxOverruns, limits } = task;
  let parsed: ParsedMessage;
  try {
    parsed = parsedFor(task.message);
  } catch (error) {
    // Saved templates parse; one stored before a rule was added (e.g. with `include`) fails each recipient.
    const detail = error instanceof Error ? error.message : String(error);
    return task.scopes.map(() => ({ ok: false, reason: 'TEMPLATE_RENDER_ERROR', detail }));
  }
  const reduced: TemplateLimits = { ...limits, renderTimeoutMs: reducedBudgetMs(limits.renderTimeoutMs) };
  const outcomes: RenderOutcome[] = [];
  for (const [index, scope] of task.scopes.entries()) {
    if (index > 0 && Date.now() >= control[Control.yieldAt]!) break;
    if (overranOften(strikes, maxOverruns)) {
      outcomes.push(notRendered(maxOverruns));
      continue;
    }
    const budget = overranOften(strikes, REDUCED_AFTER_OVERRUNS) ? reduced : limits;
    Atomics.add(strikes, Strikes.renders, 1);
    control[Control.budgetMs] = budget.renderTimeoutMs;
    control[Control.startedAt] = Date.now();
    control[Control.index] = index;
    let outcome: RenderOutcome;
    try {
      outcome = { ok: true, message: renderMessage(parsed, scope, budget) };
    } catch (error) {
      if (!(error instanceof RenderFailure)) throw error;
      outcome = { ok: false, reason: error.reason, detail: error.message };
    }
    // Finished before it is counted: a watchdog that looks now leaves this worker alone, so an overrun
    // is counted once (here, or by the watchdog when it stops the worker inside the render).
    control[Control.index] = -1;
    outcomes.push(outcome);
    if (!outcome.ok && outcome.reason === 'TEMPLATE_RENDER_TIMEOUT') {
      Atomics.add(strikes, Strikes.overruns, 1);
      break;
    }
  }
  return outcomes;
}
