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

/** One pool task: a message and the recipients to render it for. */
export interface RenderTask {
  message: MessageTemplate;
  scopes: RenderScope[];
  limits: TemplateLimits;
  /**
   * Shared with the pool's watchdog: [0] the index of the recipient being rendered, [1] when its
   * render started (epoch ms). Lets the pool tell which recipient a stuck or crashed task was on.
   */
  progress?: Float64Array;
}

export type RenderOutcome =
  { ok: true; message: PushMessage } | { ok: false; reason: RenderFailureReason; detail: string };

/**
 * Consecutive time-budget failures after which the rest of a task renders with a tenth of the time
 * budget: a template that times out for every recipient would otherwise hold a worker for
 * recipients × budget and delay every other project's renders, while an ordinary message renders
 * in microseconds and still fits. A success restores the full budget.
 */
export const TIMEOUT_STRIKES = 3;
const reducedBudget = (limits: TemplateLimits): TemplateLimits => ({
  ...limits,
  renderTimeoutMs: Math.max(10, Math.floor(limits.renderTimeoutMs / 10)),
});

const parsedCache = new Map<string, ParsedMessage>();

function parsedFor(message: MessageTemplate): ParsedMessage {
  const key = JSON.stringify(message);
  let parsed = parsedCache.get(key);
  if (!parsed) {
    parsed = parseMessageTemplate(message);
    if (parsedCache.size >= 64) parsedCache.delete(parsedCache.keys().next().value!);
    parsedCache.set(key, parsed);
  }
  return parsed;
}

/** Renders a task's recipients in order; runs inside a render worker. */
export function renderBatch(task: RenderTask): RenderOutcome[] {
  let parsed: ParsedMessage;
  try {
    parsed = parsedFor(task.message);
  } catch (error) {
    // Saved templates parse; one stored before a rule was added (e.g. with `include`) fails each recipient.
    const detail = error instanceof Error ? error.message : String(error);
    return task.scopes.map(() => ({ ok: false, reason: 'TEMPLATE_RENDER_ERROR', detail }));
  }
  const outcomes: RenderOutcome[] = [];
  let strikes = 0;
  const reduced = reducedBudget(task.limits);
  for (const [index, scope] of task.scopes.entries()) {
    if (task.progress) {
      task.progress[1] = Date.now();
      task.progress[0] = index;
    }
    try {
      outcomes.push({
        ok: true,
        message: renderMessage(parsed, scope, strikes >= TIMEOUT_STRIKES ? reduced : task.limits),
      });
      strikes = 0;
    } catch (error) {
      if (!(error instanceof RenderFailure)) throw error;
      strikes = error.reason === 'TEMPLATE_RENDER_TIMEOUT' ? strikes + 1 : 0;
      outcomes.push({ ok: false, reason: error.reason, detail: error.message });
    }
  }
  return outcomes;
}
