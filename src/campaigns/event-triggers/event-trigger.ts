import { AppError } from '../../errors.js';
import type { Condition } from '../../conditions/condition-types.js';
import { validateCondition } from '../../conditions/validate-condition.js';

/** The longest delay an event-triggered campaign may wait (rule `event-triggered-campaigns`). */
export const MAX_DELAY_SECONDS = 30 * 24 * 60 * 60;

export interface EventMatcher {
  event: string;
  /** Over the event's properties (property leaves only). */
  condition?: Condition;
}

/** A campaign's `event_trigger`, as stored and answered (`delay` as given: an ISO 8601 duration or seconds). */
export interface EventTrigger extends EventMatcher {
  delay: string | number;
  cancel_on?: EventMatcher[];
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const invalid = (path: string, problem: string) =>
  new AppError('invalid', 'INVALID_EVENT_TRIGGER', `${path}: ${problem}`);

// Days, then hours, minutes and seconds, each at most once and in order: a single linear pass.
const DURATION = /^P(?:(\d{1,7})D)?(?:T(?:(\d{1,7})H)?(?:(\d{1,9})M)?(?:(\d{1,10})S)?)?$/;

/** `delay` in seconds: an ISO 8601 duration (`PT1H`, `P1DT12H`) or a whole number of seconds, 0 to 30 days. */
export function delaySeconds(delay: unknown, path = 'event_trigger.delay'): number {
  let seconds: number | undefined;
  if (typeof delay === 'number') seconds = Number.isInteger(delay) ? delay : undefined;
  else if (typeof delay === 'string' && delay.length <= 40) {
    const m = DURATION.exec(delay);
    if (m && delay !== 'P' && !delay.endsWith('T')) {
      const [d, h, min, s] = m.slice(1, 5).map((part) => Number(part ?? 0)) as [number, number, number, number];
      seconds = ((d * 24 + h) * 60 + min) * 60 + s;
    }
  }
  if (seconds === undefined)
    throw invalid(path, 'expected an ISO 8601 duration such as "PT1H" or "P1DT12H", or a whole number of seconds');
  if (seconds < 0 || seconds > MAX_DELAY_SECONDS)
    throw invalid(path, `must be between 0 and 30 days (${MAX_DELAY_SECONDS} seconds), got ${seconds} seconds`);
  return seconds;
}

function checkMatcher(input: unknown, path: string, extra: string[]): EventMatcher {
  if (!isObject(input)) throw invalid(path, 'expected an object {"event": "<name>", "condition"?: {...}}');
  const unexpected = Object.keys(input).find((k) => !['event', 'condition', ...extra].includes(k));
  if (unexpected !== undefined) throw invalid(path, `unexpected field "${unexpected}"`);
  const { event } = input;
  if (typeof event !== 'string' || event.length === 0 || [...event].length > 255 || /\p{Cc}/u.test(event))
    throw invalid(`${path}.event`, 'expected an event name of 1 to 255 characters without control characters');
  if (input.condition === undefined) return { event };
  const condition = validateCondition(input.condition, 'segment', `${path}.condition`);
  checkPropertyLeavesOnly(condition, `${path}.condition`);
  return { event, condition };
}

/** An event's condition reads the event's own properties: no `event` leaves (those count a user's past events). */
function checkPropertyLeavesOnly(node: Condition, path: string): void {
  if ('all' in node) node.all.forEach((c, i) => checkPropertyLeavesOnly(c, `${path}.all[${i}]`));
  else if ('any' in node) node.any.forEach((c, i) => checkPropertyLeavesOnly(c, `${path}.any[${i}]`));
  else if ('not' in node) checkPropertyLeavesOnly(node.not, `${path}.not`);
  else if ('event' in node)
    throw invalid(path, "an event trigger's condition tests the event's properties; event leaves are not allowed here");
  else if ('value_from' in node && node.value_from !== undefined)
    throw invalid(path, 'value_from is not allowed here; compare with a fixed value');
}

/** Save-time check of `event_trigger` (rule `event-triggered-campaigns`); a 400 names the field. */
export function parseEventTrigger(input: unknown, path = 'event_trigger'): EventTrigger {
  const base = checkMatcher(input, path, ['delay', 'cancel_on']);
  const raw = input as Record<string, unknown>;
  if (raw.delay === undefined) throw invalid(`${path}.delay`, 'required (e.g. "PT1H", or 3600 seconds)');
  delaySeconds(raw.delay, `${path}.delay`);
  const out: EventTrigger = { ...base, delay: raw.delay as string | number };
  if (raw.cancel_on !== undefined) {
    if (!Array.isArray(raw.cancel_on) || raw.cancel_on.length > 20)
      throw invalid(`${path}.cancel_on`, 'expected an array of at most 20 events');
    out.cancel_on = raw.cancel_on.map((m, i) => checkMatcher(m, `${path}.cancel_on[${i}]`, []));
  }
  return out;
}
