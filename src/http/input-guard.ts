import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';

/**
 * Deepest nesting of arrays and objects a request may carry (docs/security.md "Input handling").
 * Real bodies stay under 6 levels; 32 leaves room for nested properties and A2A metadata while
 * keeping every recursive step after parsing (validation, encoders) far from the stack's limit.
 */
export const MAX_JSON_DEPTH = 32;

/** Keys that name or reach an object's prototype; never data, refused wherever they appear. */
const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

// A NUL, or a surrogate half without its partner (JSON's `\ud800` escapes decode to those).
// eslint-disable-next-line no-control-regex -- NUL is exactly what this looks for
const BAD_TEXT = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether `text` is Unicode text both databases store alike: no U+0000, no unpaired surrogate. */
export function isStorableText(text: string): boolean {
  return !BAD_TEXT.test(text);
}

const refuse = (code: string, message: string): AppError => new AppError('invalid', code, message);

function checkText(text: string, where: string): void {
  if (!isStorableText(text)) throw refuse('INVALID_TEXT', `${where} contains a NUL character or an unpaired surrogate`);
}

/**
 * One walk over a parsed request value, iterative so that no depth can overflow the stack: every
 * string (keys included) must be storable text, nesting stays within MAX_JSON_DEPTH, and no key
 * may be `__proto__`, `constructor` or `prototype`. Throws an `invalid` AppError (400, or -32602
 * on the agent interface) naming the problem.
 */
export function assertSafeInput(value: unknown, where = 'The request body'): void {
  // Two parallel stacks rather than an object per value: this runs on every request.
  const values: unknown[] = [value];
  const depths: number[] = [0];
  while (values.length > 0) {
    const v = values.pop();
    const depth = depths.pop()! + 1;
    if (typeof v === 'string') {
      checkText(v, where);
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (depth > MAX_JSON_DEPTH)
      throw refuse('NESTING_TOO_DEEP', `${where} is nested deeper than ${MAX_JSON_DEPTH} levels`);
    if (Array.isArray(v)) {
      for (const element of v) {
        values.push(element);
        depths.push(depth);
      }
      continue;
    }
    for (const key of Object.keys(v)) {
      if (PROTOTYPE_KEYS.has(key))
        throw refuse(
          'FORBIDDEN_KEY',
          `${where} uses the key "${key}", which is not allowed (__proto__, constructor and prototype are refused)`,
        );
      checkText(key, where);
      values.push((v as Record<string, unknown>)[key]);
      depths.push(depth);
    }
  }
}

/**
 * Parses a JSON request body and checks it with `assertSafeInput`. `JSON.parse` itself is not
 * recursive in V8 and defines `__proto__` as a plain own key (never a prototype), so the walk sees
 * every key as written.
 */
export function parseJsonBody(text: string): unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw refuse('INVALID_JSON', `The request body is not valid JSON: ${(error as Error).message.slice(0, 200)}`);
  }
  assertSafeInput(parsed);
  return parsed;
}

/**
 * The same checks for the path parameters and the query string of every route (the body is
 * checked while it is parsed), before schemas and handlers see them.
 */
export function registerInputGuard(app: FastifyInstance): void {
  app.addHook('preValidation', (request, _reply, done) => {
    try {
      if (hasKeys(request.params)) assertSafeInput(request.params, 'The URL path');
      if (hasKeys(request.query)) assertSafeInput(request.query, 'The query string');
    } catch (error) {
      done(error as Error);
      return;
    }
    done();
  });
}

/** Whether a parsed params or query object holds anything (most requests carry neither). */
function hasKeys(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return value !== undefined;
  for (const key in value) if (Object.hasOwn(value, key)) return true;
  return false;
}
