import { TRIGGER_PREFIX, type Condition, type ResolvedCondition } from './condition-types.js';

/**
 * The user properties and event names a condition reads (trigger properties left out), each once,
 * in the order they first appear: what an explanation shows beside its verdict.
 */
export function conditionReads(
  condition: Condition | ResolvedCondition | null | undefined,
  into: { properties: Set<string>; events: Set<string> } = { properties: new Set(), events: new Set() },
): { properties: Set<string>; events: Set<string> } {
  if (!condition) return into;
  if ('all' in condition) for (const c of condition.all) conditionReads(c, into);
  else if ('any' in condition) for (const c of condition.any) conditionReads(c, into);
  else if ('not' in condition) conditionReads(condition.not, into);
  else if ('event' in condition) into.events.add(condition.event);
  else if ('property' in condition && !condition.property.startsWith(TRIGGER_PREFIX))
    into.properties.add(condition.property);
  return into;
}
