import { Context, toValueSync, TypeGuards, Value, type Template, type Token } from 'liquidjs';
import { AppError } from '../../errors.js';
import type { PushMessage } from '../../push/push.types.js';
import { BoundedEmitter, engine, OUTPUT_TOO_LARGE, REFUSED_TAG } from './template-engine.js';
import { applyCaps, DEFAULT_FILTER_CAPS, InputTooLarge, type FilterCaps } from './template-guards.js';

/** The fields a message locale may replace: Liquid templates like the default ones. */
export interface LocalizedFields {
  title?: string;
  body?: string;
  image_url?: string;
  landing_url?: string;
}

/**
 * A campaign's message (rule `campaign-management`): every field is a Liquid template (rule `templates`);
 * `locales` replace fields for users of a locale (rule `message-locales`, ./locales.ts).
 */
export interface MessageTemplate extends LocalizedFields {
  locales?: Record<string, LocalizedFields>;
  /** The user property holding the user's locale (default `locale`). */
  locale_property?: string;
}

const FIELDS = ['title', 'body', 'image_url', 'landing_url'] as const;
type Field = (typeof FIELDS)[number];
/**
 * Every field parsed: the default ones under their names, a locale's as `locales.<tag>.<field>` (so the
 * walkers over all templates see them; rendering takes the default names of a localized message).
 */
export type ParsedMessage = Partial<Record<string, Template[]>>;

/** What a template sees: `trigger.*`, `user.*` (properties and `project_user_id`), `campaign.*`, and for a send an event started, `event.*`. */
export interface RenderScope {
  trigger: Record<string, string | number | boolean>;
  user: Record<string, unknown>;
  campaign: { campaign_id: string; name: string };
  /** Only in a send of an event-triggered campaign (rule `event-triggered-campaigns`). */
  event?: EventScope;
}

/** `event.*`: the event that started an event-triggered send. */
export interface EventScope {
  name: string;
  /** RFC 3339. */
  timestamp: string;
  properties: Record<string, unknown>;
}

/** What one recipient's render may spend (per-render budgets; the worker pool adds the hard guards). */
export interface TemplateLimits {
  /** Wall time of one recipient's message, all fields together. */
  renderTimeoutMs: number;
  /** liquidjs's allocation budget (characters and array elements it creates) per recipient. */
  memoryLimit: number;
  /** UTF-8 bytes of one recipient's rendered fields together. */
  outputLimitBytes: number;
  /** What one filter call may be given (default `DEFAULT_FILTER_CAPS`). */
  filterCaps?: FilterCaps | undefined;
}

export type RenderFailureReason =
  | 'TEMPLATE_RENDER_ERROR'
  | 'TEMPLATE_RENDER_TIMEOUT'
  | 'TEMPLATE_MEMORY_EXCEEDED'
  | 'TEMPLATE_OUTPUT_TOO_LARGE'
  | 'TEMPLATE_INPUT_TOO_LARGE'
  | 'INVALID_RENDERED_URL'
  | 'EMPTY_MESSAGE';

export class RenderFailure extends Error {
  readonly reason: RenderFailureReason;
  constructor(reason: RenderFailureReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** Parses every field once; a syntax error names the field and its position (line, col). */
export function parseMessageTemplate(message: MessageTemplate): ParsedMessage {
  const parsed: ParsedMessage = {};
  parseFields(message, '', parsed);
  for (const [tag, fields] of Object.entries(message.locales ?? {})) parseFields(fields, `locales.${tag}.`, parsed);
  return parsed;
}

function parseFields(message: LocalizedFields, prefix: string, into: ParsedMessage): void {
  for (const field of FIELDS) {
    const source = message[field];
    if (source === undefined) continue;
    try {
      into[prefix + field] = engine.parse(source);
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      throw new AppError(
        'invalid',
        text.includes(REFUSED_TAG) ? 'TEMPLATE_TAG_NOT_ALLOWED' : 'INVALID_TEMPLATE',
        `message.${prefix}${field}: ${text}`,
      );
    }
  }
}

/**
 * The trigger properties a message cannot do without (rule `trigger-errors`): every `trigger.<name>` it reads,
 * found by walking the parsed templates, except reads whose first filter is `default`.
 */
export function triggerPropertiesRequiredByMessage(parsed: ParsedMessage, into = new Set<string>()): Set<string> {
  for (const templates of Object.values(parsed)) if (templates) walkTemplates(templates, into);
  return into;
}

function walkTemplates(templates: Template[], into: Set<string>): void {
  for (const template of templates) {
    if (template.arguments) for (const argument of template.arguments()) visitArgument(argument, into);
    if (template.children) walkTemplates(finishSync(template.children(false, true)), into);
  }
}

export function finishSync<T>(generator: Generator<unknown, T>): T {
  let step = generator.next();
  while (!step.done) step = generator.next(step.value);
  return step.value;
}

export type FilterLike = { name: string; args: unknown[] };

function visitFiltered(initial: Token[], filters: FilterLike[], into: Set<string>): void {
  const optional = filters[0]?.name === 'default';
  for (const token of initial) visitToken(token, optional ? undefined : into, into);
  for (const filter of filters)
    for (const arg of filter.args) visitToken(Array.isArray(arg) ? arg[1] : arg, into, into);
}

function visitArgument(argument: unknown, into: Set<string>): void {
  if (argument instanceof Value) visitFiltered(argument.initial.postfix, argument.filters, into);
  else visitToken(argument, into, into);
}

/** `required` is where a `trigger.<name>` read by this token goes (undefined: optional); nested reads always count. */
function visitToken(token: unknown, required: Set<string> | undefined, into: Set<string>): void {
  if (TypeGuards.isPropertyAccessToken(token)) {
    const [root, first] = token.props;
    if (
      token.variable === undefined &&
      TypeGuards.isWordToken(root) &&
      root.content === 'trigger' &&
      first !== undefined
    ) {
      if (TypeGuards.isWordToken(first) || TypeGuards.isQuotedToken(first)) required?.add(first.content);
    }
    for (const prop of token.props) if (!TypeGuards.isWordToken(prop)) visitToken(prop, into, into);
    if (token.variable !== undefined) visitToken(token.variable, into, into);
  } else if (TypeGuards.isRangeToken(token)) {
    visitToken(token.lhs, into, into);
    visitToken(token.rhs, into, into);
  } else if (TypeGuards.isFilteredValueToken(token)) {
    visitFiltered(token.initial.postfix, token.filters, into);
  }
}

const isHttpUrl = (text: string): boolean => {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
};

/** The detail of a recipient stopped on the time budget, inside the worker or by the pool's watchdog. */
export const timeoutDetail = (budgetMs: number) =>
  `rendering ran past its time budget of ${budgetMs} ms and was stopped`;

function failureFor(field: Field, error: unknown, limits: TemplateLimits): RenderFailure {
  const message = error instanceof Error ? error.message.split('\n')[0]! : String(error);
  const at = `message.${field}`;
  // liquidjs wraps what a filter throws; the original says whether it was a cap.
  if ((error as { originalError?: unknown }).originalError instanceof InputTooLarge || error instanceof InputTooLarge)
    return new RenderFailure('TEMPLATE_INPUT_TOO_LARGE', `${at}: ${message}`);
  if (message.includes('template render limit exceeded'))
    return new RenderFailure('TEMPLATE_RENDER_TIMEOUT', `${at}: ${timeoutDetail(limits.renderTimeoutMs)}`);
  if (message.includes('memory alloc limit exceeded'))
    return new RenderFailure('TEMPLATE_MEMORY_EXCEEDED', `${at}: rendering exceeded its memory budget`);
  if (message.includes(OUTPUT_TOO_LARGE))
    return new RenderFailure('TEMPLATE_OUTPUT_TOO_LARGE', `${at}: ${OUTPUT_TOO_LARGE}`);
  return new RenderFailure('TEMPLATE_RENDER_ERROR', `${at}: ${message}`);
}

export const DEFAULT_TEMPLATE_LIMITS: TemplateLimits = {
  renderTimeoutMs: 200,
  memoryLimit: 10_000_000,
  outputLimitBytes: 65_536,
};

/**
 * Renders one recipient's message; a failure concerns only that recipient. Synchronous and
 * CPU-bound: call it only inside the render worker (src/campaigns/templates/render-pool.ts), never on the
 * HTTP event loop.
 */
export function renderMessage(
  parsed: ParsedMessage,
  scope: RenderScope,
  limits: TemplateLimits = DEFAULT_TEMPLATE_LIMITS,
): PushMessage {
  const out: Partial<Record<Field, string>> = {};
  const deadline = performance.now() + limits.renderTimeoutMs;
  const caps = limits.filterCaps ?? DEFAULT_FILTER_CAPS;
  let bytesLeft = limits.outputLimitBytes;
  for (const field of FIELDS) {
    const templates = parsed[field];
    if (!templates) continue;
    let text: string;
    try {
      const renderLimit = Math.max(0, deadline - performance.now());
      const context = new Context(
        scope,
        engine.options,
        { sync: true, renderLimit, memoryLimit: limits.memoryLimit },
        { liquid: engine },
      );
      applyCaps(context, caps);
      const emitter = new BoundedEmitter(bytesLeft, caps.elements);
      text = toValueSync(engine.renderer.renderTemplates(templates, context, emitter)) as string;
    } catch (error) {
      throw failureFor(field, error, limits);
    }
    bytesLeft -= Buffer.byteLength(text);
    if (bytesLeft < 0) throw new RenderFailure('TEMPLATE_OUTPUT_TOO_LARGE', `message.${field}: ${OUTPUT_TOO_LARGE}`);
    if (field === 'image_url' || field === 'landing_url') {
      text = text.trim();
      if (text !== '' && !isHttpUrl(text))
        throw new RenderFailure('INVALID_RENDERED_URL', `message.${field} did not render to an absolute http(s) URL`);
    }
    if (text !== '') out[field] = text;
  }
  if (out.title === undefined && out.body === undefined)
    throw new RenderFailure('EMPTY_MESSAGE', 'title and body both rendered empty');
  return { title: out.title, body: out.body, imageUrl: out.image_url, landingUrl: out.landing_url };
}
