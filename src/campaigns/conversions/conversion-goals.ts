import { AppError } from '../../errors.js';
import type { Condition } from '../../conditions/condition-types.js';
import { validateCondition } from '../../conditions/validate-condition.js';

/** At most this many goals per campaign; the first is the primary one (rule `conversion-goals`). */
export const MAX_GOALS = 4;
export const MIN_DEADLINE_SECONDS = 3600;
export const MAX_DEADLINE_SECONDS = 30 * 24 * 3600;

/** A campaign's conversion goal as stored and answered (`deadline` as given). */
export interface ConversionGoal {
  event: string;
  /** Over the event's properties (property leaves only), like an event trigger's condition. */
  where?: Condition;
  deadline: string | number;
  counted_from: 'send' | 'open';
  revenue_property?: string;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const invalid = (path: string, problem: string) =>
  new AppError('invalid', 'INVALID_CONVERSION_GOALS', `${path}: ${problem}`);

const FIELDS = ['event', 'where', 'deadline', 'counted_from', 'revenue_property'];
// A whole number of hours or days: one linear pass.
const DEADLINE = /^([1-9]\d{0,5})([hd])$/;

/** `deadline` in seconds: `"<n>h"`, `"<n>d"` or a whole number of seconds, 1 hour to 30 days. */
export function deadlineSeconds(deadline: unknown, path = 'deadline'): number {
  let seconds: number | undefined;
  if (typeof deadline === 'number') seconds = Number.isSafeInteger(deadline) ? deadline : undefined;
  else if (typeof deadline === 'string') {
    const m = DEADLINE.exec(deadline);
    if (m) seconds = Number(m[1]) * (m[2] === 'h' ? 3600 : 86_400);
  }
  if (seconds === undefined)
    throw invalid(path, 'expected "<n>h" or "<n>d" (e.g. "24h", "7d") or a whole number of seconds');
  if (seconds < MIN_DEADLINE_SECONDS || seconds > MAX_DEADLINE_SECONDS)
    throw invalid(path, `must be between 1 hour and 30 days (3600 to ${MAX_DEADLINE_SECONDS} seconds), got ${seconds}`);
  return seconds;
}

/** The goal's condition reads the event's own properties: no `event` leaves, no `value_from`. */
function checkPropertyLeavesOnly(node: Condition, path: string): void {
  if ('all' in node) node.all.forEach((c, i) => checkPropertyLeavesOnly(c, `${path}.all[${i}]`));
  else if ('any' in node) node.any.forEach((c, i) => checkPropertyLeavesOnly(c, `${path}.any[${i}]`));
  else if ('not' in node) checkPropertyLeavesOnly(node.not, `${path}.not`);
  else if ('event' in node)
    throw invalid(path, "a goal's condition tests the event's properties; event leaves are not allowed here");
  else if ('value_from' in node && node.value_from !== undefined)
    throw invalid(path, 'value_from is not allowed here; compare with a fixed value');
}

function parseGoal(input: unknown, path: string): ConversionGoal {
  if (!isObject(input))
    throw invalid(path, 'expected an object {"event", "where"?, "deadline", "counted_from"?, "revenue_property"?}');
  const unexpected = Object.keys(input).find((k) => !FIELDS.includes(k));
  if (unexpected !== undefined) throw invalid(path, `unexpected field "${unexpected}"`);
  const { event } = input;
  if (typeof event !== 'string' || event.length === 0 || [...event].length > 255 || /\p{Cc}/u.test(event))
    throw invalid(`${path}.event`, 'expected an event name of 1 to 255 characters without control characters');
  if (input.deadline === undefined) throw invalid(`${path}.deadline`, 'required (e.g. "24h", "7d", or 86400 seconds)');
  deadlineSeconds(input.deadline, `${path}.deadline`);
  const countedFrom = input.counted_from ?? 'send';
  if (countedFrom !== 'send' && countedFrom !== 'open')
    throw invalid(`${path}.counted_from`, 'expected "send" or "open"');
  const goal: ConversionGoal = {
    event,
    deadline: input.deadline as string | number,
    counted_from: countedFrom,
  };
  if (input.where !== undefined) {
    const where = validateCondition(input.where, 'segment', `${path}.where`);
    checkPropertyLeavesOnly(where, `${path}.where`);
    goal.where = where;
  }
  if (input.revenue_property !== undefined) {
    const name = input.revenue_property;
    if (typeof name !== 'string' || name.length === 0 || name.length > 255)
      throw invalid(`${path}.revenue_property`, 'expected a property name of 1 to 255 characters');
    goal.revenue_property = name;
  }
  return goal;
}

/** Save-time check of `conversion_goals` (rule `conversion-goals`): null or [] for none; a 400 names the field. */
export function parseConversionGoals(input: unknown): ConversionGoal[] {
  if (input === null || input === undefined) return [];
  if (!Array.isArray(input)) throw invalid('conversion_goals', 'expected an array of goals (or null for none)');
  if (input.length > MAX_GOALS)
    throw invalid('conversion_goals', `at most ${MAX_GOALS} goals per campaign, got ${input.length}`);
  return input.map((g, i) => parseGoal(g, `conversion_goals[${i}]`));
}

/** The goal's revenue from the event: the named property when it is a finite number, else null. */
export function revenueOf(goal: ConversionGoal, properties: Record<string, unknown>): number | null {
  if (goal.revenue_property === undefined || !Object.hasOwn(properties, goal.revenue_property)) return null;
  const value = properties[goal.revenue_property];
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}
