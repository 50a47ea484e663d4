import AjvCompiler from '@fastify/ajv-compiler';
import type { TSchema } from '@sinclair/typebox';

/** What an Ajv error says, as Fastify's `schemaErrorFormatter` also receives it. */
export interface SchemaError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string | undefined;
}

/** Longest URL a request may carry where an absolute http(s) URL is expected. */
export const MAX_URL_LENGTH = 2048;

/** Absolute http(s) with a host, as WHATWG URL parses it (so a non-ASCII host or path is fine). */
export function isHttpUrl(value: string): boolean {
  if (value.length > MAX_URL_LENGTH) return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** The formats Herald's schemas name beyond ajv-formats' own. */
const heraldFormats = (ajv: AjvCompiler.Ajv): AjvCompiler.Ajv =>
  ajv.addFormat('http-url', { type: 'string', validate: isHttpUrl });

/**
 * The one Ajv set-up: the HTTP app validates route schemas with it (`buildApp`'s `ajv` option) and
 * `compileValidator` checks input that arrives elsewhere (A2A skills, the CLI), so a schema gives
 * the same verdict and the same errors whichever way the input came. Values are checked as sent:
 * no coercion, no fields removed. One error at a time (`allErrors` off, Fastify's own default):
 * collecting every error lets a crafted body cost far more than a linear pass.
 */
export const AJV_OPTIONS = {
  customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false },
  plugins: [heraldFormats],
} satisfies Parameters<AjvCompiler.BuildCompilerFromPool>[1];

const build = AjvCompiler()({}, AJV_OPTIONS);

/** A compiled check: `undefined` when `value` is valid, else Ajv's errors (the first failure). */
export type SchemaCheck = (value: unknown) => readonly SchemaError[] | undefined;

export function compileValidator(schema: TSchema): SchemaCheck {
  // The route fields only matter to Fastify's standalone mode; no schema here is `$async`.
  const validate = build({ schema, method: '', url: '', httpPart: 'body' });
  return (value) => (validate(value) === true ? undefined : (validate.errors ?? []));
}
