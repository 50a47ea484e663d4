import type { Condition, Scalar } from './condition-types.js';
import { matchesScalar } from './evaluate-scalar.js';

/**
 * A condition over one bag of properties (an event's), evaluated in JavaScript with the condition
 * language's semantics, leaf by leaf as `matchesScalar` does; no condition holds. An `event` leaf
 * (a count of a user's past events) has no meaning over a property bag: it never holds, and save
 * time refuses it where this runs.
 */
export function propertiesSatisfy(condition: Condition | undefined, properties: Record<string, unknown>): boolean {
  if (condition === undefined) return true;
  if ('all' in condition) return condition.all.every((c) => propertiesSatisfy(c, properties));
  if ('any' in condition) return condition.any.some((c) => propertiesSatisfy(c, properties));
  if ('not' in condition) return !propertiesSatisfy(condition.not, properties);
  if ('event' in condition) return false;
  const actual = Object.hasOwn(properties, condition.property) ? properties[condition.property] : undefined;
  // Objects and arrays are not scalars: present (for exists), equal to no scalar.
  const scalar = (actual !== null && typeof actual === 'object' ? {} : actual) as Scalar | undefined;
  return matchesScalar(scalar, condition.op, condition.value);
}
