import { AppError } from '../errors.js';
import {
  EVENT_OPS,
  PROPERTY_OPS,
  TRIGGER_PREFIX,
  type Condition,
  type ConditionKind,
  type PropertyOp,
  type Scalar,
} from './condition-types.js';

const MAX_DEPTH = 8;
const MAX_NODES = 500;
const MAX_IN_VALUES = 100;
const MAX_STRING = 8192;
/** Quotes and backslashes cannot be addressed in a SQLite JSON path; control characters are never meant. */
// eslint-disable-next-line no-control-regex -- the pattern exists to refuse control characters
const NAME_PATTERN = /^[^"\\\u0000-\u001f\u007f]{1,128}$/u;

const ORDERING_OPS: readonly PropertyOp[] = ['gt', 'gte', 'lt', 'lte'];
const STRING_OPS: readonly PropertyOp[] = ['contains', 'starts_with'];
const LIST_OPS: readonly PropertyOp[] = ['in', 'not_in'];
const PRESENCE_OPS: readonly PropertyOp[] = ['exists', 'not_exists'];

class ConditionError extends AppError {
  constructor(path: string, problem: string) {
    super('invalid', 'INVALID_CONDITION', `${path}: ${problem}`);
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isScalar = (value: unknown): value is Scalar =>
  value === null ||
  typeof value === 'boolean' ||
  (typeof value === 'number' && Number.isFinite(value)) ||
  (typeof value === 'string' && value.length <= MAX_STRING);
const describe = (value: unknown): string =>
  value === undefined ? 'nothing' : Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`;

/**
 * Checks a stored condition tree (rule `condition-language`) and returns it typed. `trigger.*` may
 * appear only in audience conditions. Errors name the offending node by its path from `root`, e.g.
 * `segment.all[1].op: unknown op "eqq"`.
 */
export function validateCondition(input: unknown, kind: ConditionKind, root: string = kind): Condition {
  const state = { nodes: 0 };
  check(input, root, kind, 1, state);
  return input as Condition;
}

function check(node: unknown, path: string, kind: ConditionKind, depth: number, state: { nodes: number }): void {
  if (depth > MAX_DEPTH) throw new ConditionError(path, `conditions nest at most ${MAX_DEPTH} levels`);
  if (++state.nodes > MAX_NODES) throw new ConditionError(path, `a condition tree holds at most ${MAX_NODES} nodes`);
  if (!isObject(node)) throw new ConditionError(path, `expected a condition object, got ${describe(node)}`);
  const keys = ['all', 'any', 'not', 'property', 'event'].filter((k) => k in node);
  if (keys.length !== 1)
    throw new ConditionError(path, 'a condition holds exactly one of all, any, not, property or event');
  const key = keys[0]!;
  if (key === 'all' || key === 'any') {
    onlyKeys(node, [key], path);
    const list = node[key];
    if (!Array.isArray(list) || list.length === 0 || list.length > 100)
      throw new ConditionError(`${path}.${key}`, 'expected an array of 1 to 100 conditions');
    list.forEach((child, i) => check(child, `${path}.${key}[${i}]`, kind, depth + 1, state));
  } else if (key === 'not') {
    onlyKeys(node, ['not'], path);
    check(node.not, `${path}.not`, kind, depth + 1, state);
  } else if (key === 'event') {
    checkEventLeaf(node, path);
  } else {
    checkPropertyLeaf(node, path, kind);
  }
}

function onlyKeys(node: Record<string, unknown>, allowed: string[], path: string): void {
  const extra = Object.keys(node).find((k) => !allowed.includes(k));
  if (extra !== undefined) throw new ConditionError(path, `unexpected field "${extra}"`);
}

function checkName(value: unknown, path: string, what: string): string {
  if (typeof value !== 'string' || !NAME_PATTERN.test(value))
    throw new ConditionError(
      path,
      `${what} must be 1 to 128 characters without quotes, backslashes or control characters`,
    );
  return value;
}

function checkTriggerRef(name: string, path: string, kind: ConditionKind): void {
  if (kind === 'segment')
    throw new ConditionError(path, 'a segment cannot read trigger properties (use audience_conditions)');
  if (name.length === TRIGGER_PREFIX.length) throw new ConditionError(path, 'trigger property name is empty');
}

function checkPropertyLeaf(node: Record<string, unknown>, path: string, kind: ConditionKind): void {
  onlyKeys(node, ['property', 'op', 'value', 'value_from'], path);
  const property = checkName(node.property, `${path}.property`, 'property');
  if (property.startsWith(TRIGGER_PREFIX)) checkTriggerRef(property, `${path}.property`, kind);
  const op = node.op;
  if (typeof op !== 'string' || !(PROPERTY_OPS as readonly string[]).includes(op)) {
    throw new ConditionError(
      `${path}.op`,
      `unknown op ${JSON.stringify(op)}; expected one of ${PROPERTY_OPS.join(', ')}`,
    );
  }
  const typedOp = op as PropertyOp;
  const hasValue = 'value' in node;
  if ('value_from' in node) {
    const from = checkName(node.value_from, `${path}.value_from`, 'value_from');
    if (!from.startsWith(TRIGGER_PREFIX))
      throw new ConditionError(`${path}.value_from`, 'value_from must read trigger.<name>');
    checkTriggerRef(from, `${path}.value_from`, kind);
    if (hasValue) throw new ConditionError(path, 'give value or value_from, not both');
    if (property.startsWith(TRIGGER_PREFIX))
      throw new ConditionError(path, 'value_from compares a user property, not a trigger property');
    if (PRESENCE_OPS.includes(typedOp) || LIST_OPS.includes(typedOp))
      throw new ConditionError(path, `op ${op} does not take value_from`);
    return;
  }
  checkValue(typedOp, node.value, hasValue, `${path}.value`);
}

function checkValue(op: PropertyOp, value: unknown, hasValue: boolean, path: string): void {
  if (PRESENCE_OPS.includes(op)) {
    if (hasValue) throw new ConditionError(path, `op ${op} takes no value`);
    return;
  }
  if (!hasValue) throw new ConditionError(path, `op ${op} needs a value`);
  if (LIST_OPS.includes(op)) {
    if (!Array.isArray(value) || value.length === 0 || value.length > MAX_IN_VALUES || !value.every(isScalar)) {
      throw new ConditionError(
        path,
        `op ${op} needs an array of 1 to ${MAX_IN_VALUES} strings, numbers, booleans or nulls`,
      );
    }
  } else if (ORDERING_OPS.includes(op)) {
    if (!(
      (typeof value === 'number' && Number.isFinite(value)) ||
      (typeof value === 'string' && value.length <= MAX_STRING)
    )) {
      throw new ConditionError(path, `op ${op} needs a number or a string, got ${describe(value)}`);
    }
  } else if (STRING_OPS.includes(op)) {
    if (typeof value !== 'string' || value.length > MAX_STRING)
      throw new ConditionError(path, `op ${op} needs a string, got ${describe(value)}`);
  } else if (!isScalar(value)) {
    throw new ConditionError(path, `op ${op} needs a string, number, boolean or null, got ${describe(value)}`);
  }
}

function checkEventLeaf(node: Record<string, unknown>, path: string): void {
  onlyKeys(node, ['event', 'op', 'count_gte', 'within_days'], path);
  checkName(node.event, `${path}.event`, 'event');
  if (typeof node.op !== 'string' || !(EVENT_OPS as readonly string[]).includes(node.op)) {
    throw new ConditionError(
      `${path}.op`,
      `unknown op ${JSON.stringify(node.op)}; expected performed or not_performed`,
    );
  }
  const int = (name: string, max: number) => {
    const v = node[name];
    if (v !== undefined && !(Number.isInteger(v) && (v as number) >= 1 && (v as number) <= max))
      throw new ConditionError(`${path}.${name}`, `must be an integer from 1 to ${max}`);
  };
  int('count_gte', 1_000_000);
  int('within_days', 36_500);
}
