import { defaultOperators, type Context, type FilterImplOptions, type Liquid, type Operators } from 'liquidjs';

// liquidjs checks a render's time budget only between template nodes, so one filter call (or a chain of
// them in one output) runs to its end however long it takes. These guards make every filter call
// check the budget first (and between the items of the filters that evaluate per item), and refuse
// inputs larger than a filter can take in well under a budget (`bench/template-filters.ts` measures
// each filter at its cap). What is left uninterruptible is one capped call; the pool's watchdog
// (templates/render-scheduler.ts) stops anything else just past the budget.

/**
 * How much one uninterruptible step may be given. Values are counted as a filter walks them: nested
 * arrays and objects each time they are reached (one array pushed a thousand times counts a thousand
 * times), strings by length. Steps that cost more per element take a fraction (`COSTLIER`).
 */
export interface FilterCaps {
  /** Elements (array items and object values) a filter or an array comparison takes. */
  elements: number;
  /** Characters of the strings a filter takes. */
  chars: number;
  /** Elements or characters one allocation that liquidjs charges may have: a range such as `(1..N)`, a filter's result. */
  allocation: number;
}

export const DEFAULT_FILTER_CAPS: FilterCaps = { elements: 50_000, chars: 100_000, allocation: 100_000 };

/**
 * Steps that take a fraction of the caps, by what `npm run bench:templates` measured at the full
 * caps: comparison sorts (n log n calls of a JavaScript comparator), JSON with liquidjs's per-value
 * replacer, `date` formats (parsed character by character) and the operators that compare arrays
 * element by element through generators.
 */
const COSTLIER: Record<string, number> = {
  sort: 10,
  sort_natural: 10,
  sample: 10,
  json: 5,
  jsonify: 5,
  inspect: 5,
  date: 10,
  '==': 5,
  '!=': 5,
  '<>': 5,
  contains: 5,
};

/** Filters whose cost does not depend on their input's size: nothing to measure. */
const CONSTANT_TIME = new Set(['size', 'first', 'last', 'default', 'raw']);
/** Operators that walk arrays (element by element, nested ones too). */
const WALKING_OPERATORS = ['==', '!=', '<>', 'contains'];

/** A filter or operator given more than its cap; the recipient fails with `TEMPLATE_INPUT_TOO_LARGE`. */
export class InputTooLarge extends Error {}

const isPlainObject = (value: object): boolean => {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
};

/**
 * Whether `value` fits within `elements` and `chars`. Walks arrays and plain objects without
 * recursion and stops as soon as a cap is passed, so the check itself costs at most the cap.
 */
export function fitsCaps(value: unknown, elements: number, chars: number): boolean {
  let seenElements = 0;
  let seenChars = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') {
      seenChars += item.length;
      if (seenChars > chars) return false;
    } else if (Array.isArray(item)) {
      seenElements += item.length;
      if (seenElements > elements) return false;
      for (const element of item) if (typeof element === 'object' || typeof element === 'string') stack.push(element);
    } else if (typeof item === 'object' && item !== null && isPlainObject(item)) {
      const values = Object.values(item);
      seenElements += values.length;
      if (seenElements > elements) return false;
      for (const element of values) if (typeof element === 'object' || typeof element === 'string') stack.push(element);
    }
  }
  return true;
}

// A render's caps and its budget's uncapped charge ride on its two limiters as symbol-keyed properties
// (every context a render spawns shares them). Weak maps keyed by these per-render objects doubled a
// render's CPU, and their collections held single renders for hundreds of ms, past the default time
// budget (`npm run bench:render`; figures in docs/benchmarks.md, "Profiles behind the code").
const CAPS = Symbol('filter caps');
const CHARGE = Symbol('uncapped charge');
type Limiter = Context['renderLimit'] & { [CAPS]?: FilterCaps; [CHARGE]?: (count: number) => void };

/**
 * Gives a render's context the caps its filters apply, and caps each allocation liquidjs charges:
 * liquidjs counts a range or a filter's result before building it, in one step nothing interrupts
 * (`(1..4000000)` fits the allocation budget and takes a few hundred ms to build).
 */
export function applyCaps(context: Context, caps: FilterCaps): void {
  (context.renderLimit as Limiter)[CAPS] = caps;
  const budget: Limiter = context.memoryLimit;
  const use = budget.use.bind(budget);
  budget[CHARGE] = use;
  budget.use = (count: number) => {
    use(count); // over the whole budget, liquidjs's own error (the allocation budget) comes first
    if (+count > caps.allocation)
      throw new InputTooLarge(
        `one allocation takes at most ${caps.allocation} elements or characters; this one needs ${+count}`,
      );
  };
}

/** Charges text already built (a capture's output) to the allocation budget, without the per-allocation cap. */
export function chargeWritten(context: Context, chars: number): void {
  const budget: Limiter = context.memoryLimit;
  (budget[CHARGE] ?? budget.use.bind(budget))(chars);
}

export const capsOf = (context: Context): FilterCaps => (context.renderLimit as Limiter)[CAPS] ?? DEFAULT_FILTER_CAPS;

/** Throws liquidjs's own "template render limit exceeded" once the render's time budget is spent. */
const checkDeadline = (context: Context): void => context.renderLimit.check(performance.now());

function refuseLarger(name: string, what: string, values: unknown[], caps: FilterCaps, measureChars = true): void {
  const factor = COSTLIER[name] ?? 1;
  const elements = Math.floor(caps.elements / factor);
  const chars = measureChars ? Math.floor(caps.chars / factor) : Number.POSITIVE_INFINITY;
  const most = measureChars ? `${elements} elements and ${chars} characters` : `${elements} elements`;
  for (const value of values)
    if (!fitsCaps(value, elements, chars))
      throw new InputTooLarge(`${what} takes at most ${most} (nested values counted); its input is larger`);
}

const isGenerator = (value: unknown): value is Generator<unknown, unknown, unknown> =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as Generator).next === 'function' &&
  typeof (value as Generator).throw === 'function';

/** Runs a filter's or operator's generator, checking the time budget before each step it yields. */
function* checked(context: Context, steps: Generator<unknown, unknown, unknown>): Generator<unknown, unknown, unknown> {
  let step = steps.next();
  while (!step.done) {
    checkDeadline(context);
    let input: unknown;
    try {
      input = yield step.value;
    } catch (error) {
      step = steps.throw(error);
      continue;
    }
    step = steps.next(input);
  }
  return step.value;
}

function guardFilter(name: string, filter: FilterImplOptions): FilterImplOptions {
  const handler = typeof filter === 'function' ? filter : filter.handler;
  const measured = !CONSTANT_TIME.has(name);
  const guarded: typeof handler = function (this, value: unknown, ...args: unknown[]) {
    const context = this.context;
    checkDeadline(context);
    if (measured) refuseLarger(name, name, [value, ...args], capsOf(context));
    const result: unknown = handler.call(this, value, ...args);
    return isGenerator(result) ? checked(context, result) : result;
  };
  return typeof filter === 'function' ? guarded : { ...filter, handler: guarded };
}

/** Re-registers every filter of `engine` with the time check and its input caps. */
export function guardFilters(engine: Liquid): void {
  for (const [name, filter] of Object.entries(engine.filters)) engine.registerFilter(name, guardFilter(name, filter));
}

/** liquidjs's operators, those that walk arrays checked like filters (`==` on a structure nested by reference). */
export function guardedOperators(): Operators {
  const operators: Operators = { ...defaultOperators };
  for (const name of WALKING_OPERATORS) {
    const operator = defaultOperators[name]!;
    operators[name] = function (lhs: unknown, rhs: unknown, context: Context) {
      checkDeadline(context);
      // Strings compare in one linear pass (`indexOf`, `===`): only arrays are measured.
      refuseLarger(name, `the ${name} operator`, [lhs, rhs], capsOf(context), false);
      const result: unknown = (operator as (l: unknown, r: unknown, c: Context) => unknown)(lhs, rhs, context);
      return (isGenerator(result) ? checked(context, result) : result) as ReturnType<typeof operator>;
    };
  }
  return operators;
}
