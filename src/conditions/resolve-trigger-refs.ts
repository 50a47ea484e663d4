import { matchesScalar } from './evaluate-scalar.js';
import {
  TRIGGER_PREFIX,
  type Condition,
  type PropertyLeaf,
  type ResolvedCondition,
  type Scalar,
} from './condition-types.js';

export type TriggerProperties = Record<string, string | number | boolean>;

const triggerName = (ref: string): string | undefined =>
  ref.startsWith(TRIGGER_PREFIX) ? ref.slice(TRIGGER_PREFIX.length) : undefined;

/**
 * Trigger properties an audience condition cannot do without: every `trigger.<name>` it reads,
 * except under `exists`/`not_exists`, which ask precisely whether the trigger supplied it.
 */
export function triggerPropertiesRequiredBy(
  condition: Condition | null | undefined,
  into = new Set<string>(),
): Set<string> {
  if (!condition) return into;
  if ('all' in condition) condition.all.forEach((c) => triggerPropertiesRequiredBy(c, into));
  else if ('any' in condition) condition.any.forEach((c) => triggerPropertiesRequiredBy(c, into));
  else if ('not' in condition) triggerPropertiesRequiredBy(condition.not, into);
  else if ('property' in condition) {
    const own = triggerName(condition.property);
    if (own !== undefined && condition.op !== 'exists' && condition.op !== 'not_exists') into.add(own);
    const from = condition.value_from === undefined ? undefined : triggerName(condition.value_from);
    if (from !== undefined) into.add(from);
  }
  return into;
}

/**
 * Replaces every `trigger.*` reference by the trigger's value, so the compiler sees only user
 * properties and constants: a `trigger.<name>` leaf becomes `{const}` (decided here, with the same
 * semantics as SQL), and `value_from` becomes a fixed `value`. A trigger value whose type the op
 * cannot compare (a boolean under `gt`, a number under `contains`) makes the leaf false.
 */
export function resolveTriggerRefs(condition: Condition, properties: TriggerProperties): ResolvedCondition {
  if ('all' in condition) return { all: condition.all.map((c) => resolveTriggerRefs(c, properties)) };
  if ('any' in condition) return { any: condition.any.map((c) => resolveTriggerRefs(c, properties)) };
  if ('not' in condition) return { not: resolveTriggerRefs(condition.not, properties) };
  if ('event' in condition) return condition;
  return resolveLeaf(condition, properties);
}

function valueOf(properties: TriggerProperties, name: string): Scalar | undefined {
  return Object.hasOwn(properties, name) ? properties[name] : undefined;
}

function resolveLeaf(leaf: PropertyLeaf, properties: TriggerProperties): ResolvedCondition {
  const own = triggerName(leaf.property);
  if (own !== undefined) return { const: matchesScalar(valueOf(properties, own), leaf.op, leaf.value) };
  if (leaf.value_from === undefined) return leaf;
  const value = valueOf(properties, triggerName(leaf.value_from) ?? '');
  if (value === undefined) return { const: leaf.op === 'ne' };
  const ordering = ['gt', 'gte', 'lt', 'lte'].includes(leaf.op);
  if (
    (ordering && typeof value === 'boolean') ||
    ((leaf.op === 'contains' || leaf.op === 'starts_with') && typeof value !== 'string')
  )
    return { const: false };
  return { property: leaf.property, op: leaf.op, value };
}
