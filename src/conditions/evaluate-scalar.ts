import type { PropertyOp, Scalar } from './condition-types.js';

/** Code point order, the order the SQL compiler uses (byte order of UTF-8). */
export function compareCodePoints(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

const sameValue = (actual: Scalar | undefined, operand: Scalar): boolean =>
  actual !== undefined && typeof actual === typeof operand && actual === operand;

/**
 * One property leaf evaluated in JavaScript, with exactly the semantics the SQL compiler gives it
 * (see `condition-types.ts`). `actual` is `undefined` when the property is missing. Used for
 * `trigger.*` leaves, which are decided before the query is built.
 */
export function matchesScalar(
  actual: Scalar | undefined,
  op: PropertyOp,
  operand: Scalar | Scalar[] | undefined,
): boolean {
  switch (op) {
    case 'eq':
      return sameValue(actual, operand as Scalar);
    case 'ne':
      return !sameValue(actual, operand as Scalar);
    case 'in':
      return (operand as Scalar[]).some((v) => sameValue(actual, v));
    case 'not_in':
      return !(operand as Scalar[]).some((v) => sameValue(actual, v));
    case 'exists':
      return actual !== undefined && actual !== null;
    case 'not_exists':
      return actual === undefined || actual === null;
    case 'contains':
      return typeof actual === 'string' && typeof operand === 'string' && actual.includes(operand);
    case 'starts_with':
      return typeof actual === 'string' && typeof operand === 'string' && actual.startsWith(operand);
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return ordered(actual, op, operand);
  }
}

function ordered(
  actual: Scalar | undefined,
  op: 'gt' | 'gte' | 'lt' | 'lte',
  operand: Scalar | Scalar[] | undefined,
): boolean {
  let cmp: number;
  if (typeof operand === 'number' && typeof actual === 'number') cmp = actual - operand;
  else if (typeof operand === 'string' && typeof actual === 'string') cmp = compareCodePoints(actual, operand);
  else return false;
  if (op === 'gt') return cmp > 0;
  if (op === 'gte') return cmp >= 0;
  if (op === 'lt') return cmp < 0;
  return cmp <= 0;
}
