/**
 * The condition builder's model: an editable tree that maps one-to-one onto Herald's condition
 * language ({all|any:[...]}, {not:...}, property and event leaves; src/campaigns/conditions).
 * Values are kept as typed-in text with a chosen type, converted only when the tree is saved.
 */
// The operator lists come from the server's condition language itself, so the builder cannot drift
// from what Herald accepts (a dependency-free module; esbuild bundles it).
import { EVENT_OPS, PROPERTY_OPS, type EventOp, type PropertyOp } from '../../src/conditions/condition-types.js';
export { EVENT_OPS, PROPERTY_OPS, type EventOp, type PropertyOp };
export const VALUE_TYPES = ['text', 'number', 'boolean', 'null', 'trigger'] as const;
export type ValueType = (typeof VALUE_TYPES)[number];

export const OP_LABELS: Record<PropertyOp | EventOp, string> = {
  eq: 'equals',
  ne: 'does not equal',
  gt: 'greater than',
  gte: 'at least',
  lt: 'less than',
  lte: 'at most',
  in: 'is one of',
  not_in: 'is none of',
  exists: 'is set',
  not_exists: 'is not set',
  contains: 'contains',
  starts_with: 'starts with',
  performed: 'performed',
  not_performed: 'did not perform',
};

export interface GroupNode {
  kind: 'group';
  combinator: 'all' | 'any';
  negate: boolean;
  children: ConditionNode[];
}
export interface PropertyNode {
  kind: 'property';
  negate: boolean;
  property: string;
  op: PropertyOp;
  valueType: ValueType;
  value: string;
}
export interface EventNode {
  kind: 'event';
  negate: boolean;
  event: string;
  op: EventOp;
  countGte: string;
  withinDays: string;
}
export type ConditionNode = GroupNode | PropertyNode | EventNode;

type Scalar = string | number | boolean | null;
export type Condition = Record<string, unknown>;

export const emptyGroup = (): GroupNode => ({ kind: 'group', combinator: 'all', negate: false, children: [] });
export const newProperty = (): PropertyNode => ({
  kind: 'property',
  negate: false,
  property: '',
  op: 'eq',
  valueType: 'text',
  value: '',
});
export const newEvent = (): EventNode => ({
  kind: 'event',
  negate: false,
  event: '',
  op: 'performed',
  countGte: '',
  withinDays: '',
});

/** Thrown for a tree the user still has to fix; the message says what. */
export class ConditionError extends Error {}

const hasValue = (op: PropertyOp) => op !== 'exists' && op !== 'not_exists';
const isList = (op: PropertyOp) => op === 'in' || op === 'not_in';

function scalar(type: ValueType, text: string, where: string): Scalar {
  switch (type) {
    case 'number': {
      const n = Number(text.trim());
      if (text.trim() === '' || !Number.isFinite(n)) throw new ConditionError(`${where}: "${text}" is not a number`);
      return n;
    }
    case 'boolean':
      if (text.trim() !== 'true' && text.trim() !== 'false')
        throw new ConditionError(`${where}: a boolean is true or false`);
      return text.trim() === 'true';
    case 'null':
      return null;
    default:
      return text;
  }
}

const wrap = (negate: boolean, condition: Condition): Condition => (negate ? { not: condition } : condition);

/** The condition JSON for a tree; null for an empty root (no condition). */
export function toCondition(node: ConditionNode, root = true): Condition | null {
  if (node.kind === 'group') {
    const children = node.children.map((child) => toCondition(child, false)!);
    if (children.length === 0) {
      if (root && !node.negate) return null;
      throw new ConditionError('an empty group matches nothing: add a condition or remove the group');
    }
    return wrap(node.negate, { [node.combinator]: children });
  }
  if (node.kind === 'event') {
    if (!node.event.trim()) throw new ConditionError('an event condition needs the event name');
    const leaf: Condition = { event: node.event.trim(), op: node.op };
    if (node.countGte.trim()) leaf.count_gte = positive(node.countGte, 'at least (times)');
    if (node.withinDays.trim()) leaf.within_days = positive(node.withinDays, 'within days');
    return wrap(node.negate, leaf);
  }
  const where = node.property.trim() || 'a property condition';
  if (!node.property.trim()) throw new ConditionError('a property condition needs the property name');
  const leaf: Condition = { property: node.property.trim(), op: node.op };
  if (hasValue(node.op)) {
    if (node.valueType === 'trigger') {
      if (!node.value.trim()) throw new ConditionError(`${where}: name the trigger property to compare with`);
      leaf.value_from = `trigger.${node.value.trim().replace(/^trigger\./, '')}`;
    } else if (isList(node.op)) {
      leaf.value = node.value.split(',').map((part) => scalar(node.valueType, part.trim(), where));
    } else {
      leaf.value = scalar(node.valueType, node.value, where);
    }
  }
  return wrap(node.negate, leaf);
}

function positive(text: string, where: string): number {
  const n = Number(text.trim());
  if (!Number.isInteger(n) || n < 1) throw new ConditionError(`${where}: a whole number of 1 or more`);
  return n;
}

const typeOf = (value: Scalar): ValueType =>
  value === null ? 'null' : typeof value === 'number' ? 'number' : typeof value === 'boolean' ? 'boolean' : 'text';

/** The tree for a stored condition; throws ConditionError for what the builder cannot show (edit it as JSON). */
export function fromCondition(condition: unknown): GroupNode {
  if (condition === null || condition === undefined) return emptyGroup();
  const node = nodeOf(condition);
  return node.kind === 'group' ? node : { ...emptyGroup(), children: [node] };
}

function nodeOf(value: unknown): ConditionNode {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ConditionError('a condition is an object');
  const c = value as Record<string, unknown>;
  if ('not' in c) {
    const inner = nodeOf(c.not);
    return { ...inner, negate: !inner.negate };
  }
  for (const combinator of ['all', 'any'] as const) {
    if (combinator in c) {
      const list = c[combinator];
      if (!Array.isArray(list)) throw new ConditionError(`${combinator} takes a list`);
      return { kind: 'group', combinator, negate: false, children: list.map(nodeOf) };
    }
  }
  if (typeof c.event === 'string') {
    return {
      kind: 'event',
      negate: false,
      event: c.event,
      op: (EVENT_OPS as readonly unknown[]).includes(c.op) ? (c.op as EventOp) : 'performed',
      countGte: typeof c.count_gte === 'number' ? String(c.count_gte) : '',
      withinDays: typeof c.within_days === 'number' ? String(c.within_days) : '',
    };
  }
  if (typeof c.property === 'string' && (PROPERTY_OPS as readonly unknown[]).includes(c.op)) {
    const op = c.op as PropertyOp;
    if (typeof c.value_from === 'string')
      return {
        kind: 'property',
        negate: false,
        property: c.property,
        op,
        valueType: 'trigger',
        value: c.value_from.replace(/^trigger\./, ''),
      };
    const raw = c.value as Scalar | Scalar[] | undefined;
    const list = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
    const valueType = list.length > 0 ? typeOf(list[0]!) : 'text';
    if (list.some((v) => typeOf(v) !== valueType)) throw new ConditionError('a list of mixed types');
    return {
      kind: 'property',
      negate: false,
      property: c.property,
      op,
      valueType,
      value: list.map((v) => String(v)).join(', '),
    };
  }
  throw new ConditionError('an unknown condition');
}
