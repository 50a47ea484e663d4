/**
 * The condition language (rule `condition-language`): a JSON tree of combinators and leaves, stored
 * on a campaign as its `segment` (who may ever receive it) and `audience_conditions` (who receives
 * one trigger's message, which may read the trigger's properties).
 *
 * Type semantics (shared by the SQL compiler and the JS evaluator, and documented in
 * `src/campaigns/README.md`):
 * - A comparison never converts types: `eq 5` matches the number 5 (or 5.0), never the string "5".
 * - `gt/gte/lt/lte` compare numbers numerically when the operand is a number and strings in code
 *   point order when it is a string; a property of another type does not match.
 * - `contains`/`starts_with` match string properties only, case-sensitively.
 * - A missing property matches no comparison; `ne`, `not_in` and `not_exists` are the exact negations
 *   of `eq`, `in` and `exists`, so they match it. `exists` means present and not null.
 * - Every node is two-valued (true or false, never SQL NULL), so `not` is a plain negation.
 */
export type Scalar = string | number | boolean | null;

export const PROPERTY_OPS = [
  'eq',
  'ne',
  'gt',
  'gte',
  'lt',
  'lte',
  'in',
  'not_in',
  'exists',
  'not_exists',
  'contains',
  'starts_with',
] as const;
export type PropertyOp = (typeof PROPERTY_OPS)[number];
export const EVENT_OPS = ['performed', 'not_performed'] as const;
export type EventOp = (typeof EVENT_OPS)[number];

/** `property` is a user property name, or `trigger.<name>` (audience conditions only). */
export interface PropertyLeaf {
  property: string;
  op: PropertyOp;
  value?: Scalar | Scalar[];
  /** `trigger.<name>`: compare with that trigger property instead of a fixed `value` (audience conditions only). */
  value_from?: string;
}

/** The user performed `event` at least `count_gte` (default 1) times, within the last `within_days` if given. */
export interface EventLeaf {
  event: string;
  op: EventOp;
  count_gte?: number;
  within_days?: number;
}

export type Condition = { all: Condition[] } | { any: Condition[] } | { not: Condition } | PropertyLeaf | EventLeaf;

/** A condition after `trigger.*` references were replaced by the trigger's values: what the compiler reads. */
export type ResolvedCondition =
  | { all: ResolvedCondition[] }
  | { any: ResolvedCondition[] }
  | { not: ResolvedCondition }
  | { const: boolean }
  | (Omit<PropertyLeaf, 'value_from'> & { value?: Scalar | Scalar[] })
  | EventLeaf;

export const TRIGGER_PREFIX = 'trigger.';

export type ConditionKind = 'segment' | 'audience_conditions';
