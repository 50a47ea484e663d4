import type { FastifyContextConfig, FastifySchema } from 'fastify';

/**
 * How each route appears in `/openapi.json`, derived from the same route settings the shared hooks
 * act on (`config.auth`, `config.rateLimitClass`, `config.plainText400`), so the document declares
 * the security and the error answers a route really has, whoever wrote the route.
 */

type JsonSchema = Record<string, unknown>;

/** `X-Service-Project-ID` with the project's secret key, or with its public key. */
export const SECURITY_SCHEMES = {
  projectId: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Service-Project-ID',
    description: 'The project id, sent with either of its keys.',
  },
  secretKey: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Service-API-Key',
    description: "The project's secret key (`svc_sk_...`): server-side only, every operation.",
  },
  publicKey: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Service-API-Key',
    description: "The project's public key (`svc_pk_...`): safe in apps and browsers, client operations only.",
  },
  preferenceLink: {
    type: 'http',
    scheme: 'bearer',
    description:
      "The `token` of a preference link (`POST /api/v1/users/{id}/preferences:link`): opens that one user's preferences until it expires, for a customer-hosted preference page.",
  },
} as const;

const SECRET = { projectId: [], secretKey: [] };
const PUBLIC = { projectId: [], publicKey: [] };

export function securityFor(auth: FastifyContextConfig['auth']): Record<string, string[]>[] {
  if (auth === 'secret') return [SECRET];
  if (auth === 'client') return [PUBLIC, SECRET];
  if (auth === 'preference-link') return [{ preferenceLink: [] }];
  return [];
}

/**
 * The OpenAPI path of a Fastify route URL: `:name` and `:name(regex)` become `{name}`, and the
 * escaped colon of a custom method (`::send`) stays a literal colon, so
 * `/api/v1/campaigns/:campaign_id(^[^:/]+)::trigger` is `/api/v1/campaigns/{campaign_id}:trigger`.
 */
export function openApiPath(url: string): string {
  let out = '';
  for (let i = 0; i < url.length; i++) {
    const char = url[i]!;
    if (char === ':' && url[i + 1] === ':') {
      out += ':';
      i++;
    } else if (char === ':') {
      const name = /^[A-Za-z0-9_]+/.exec(url.slice(i + 1))?.[0] ?? '';
      i += name.length;
      if (url[i + 1] === '(') i = endOfGroup(url, i + 1);
      out += `{${name}}`;
    } else {
      out += char;
    }
  }
  return out;
}

/** Index of the `)` closing the group opened at `start` (regexes may nest groups and escape parentheses). */
function endOfGroup(url: string, start: number): number {
  let depth = 0;
  for (let i = start; i < url.length; i++) {
    if (url[i] === '\\') i++;
    else if (url[i] === '(') depth++;
    else if (url[i] === ')' && --depth === 0) return i;
  }
  return url.length - 1;
}

/** `@fastify/swagger` formats the URL it is given once more: literal colons go back to `::` for it. */
export function forSwaggerFormatter(path: string): string {
  return path.replace(/:/g, '::');
}

export const ERROR_SCHEMA: JsonSchema = {
  title: 'Error',
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'string', description: 'What went wrong, for people to read.' } },
};

const ERROR_REASON = {
  type: 'string',
  description: 'A stable UPPER_SNAKE cause (`VALIDATION_FAILED`, `UNAUTHENTICATED`, ...), for programs to read.',
};
const RETRY_AFTER = { type: 'integer', minimum: 1, description: 'Seconds to wait before retrying.' };

function jsonError(description: string, example: string, retry = false): JsonSchema {
  return {
    description,
    headers: { 'X-Error-Reason': ERROR_REASON, ...(retry ? { 'Retry-After': RETRY_AFTER } : {}) },
    content: { 'application/json': { schema: ERROR_SCHEMA, example: { error: example } } },
  };
}

function plainTextError(messages: string[]): JsonSchema {
  return {
    description: `The request is invalid. The body is the fixed message \`${messages.join('` or `')}\`; the precise cause is in \`X-Error-Reason\`.`,
    headers: { 'X-Error-Reason': ERROR_REASON },
    content: { 'text/plain': { schema: { type: 'string', enum: messages }, example: messages[0] } },
  };
}

/** Plain-text messages a route lists in its declared 400 (`Type.Union` of literals or an `enum`), else its `plainText400`. */
function plainTextMessages(declared: unknown, fallback: string): string[] {
  const schema = (declared ?? {}) as { enum?: unknown; anyOf?: { const?: unknown }[] };
  const listed = schema.enum ?? schema.anyOf?.map((s) => s.const);
  const messages = Array.isArray(listed) ? listed.filter((m): m is string => typeof m === 'string') : [];
  return messages.includes(fallback) ? messages : [fallback, ...messages];
}

/** Descriptions and examples of the JSON errors routes declare themselves (their `{"error"}` schema). */
const DECLARED_ERRORS: Record<string, [string, string]> = {
  404: ['Not found.', 'Not found'],
  409: ['Conflicts with the current state, or an `Idempotency-Key` reused with another body.', 'Conflict'],
  422: ['Understood but not allowed in the current state.', 'Not allowed'],
};

/** `{}`: the answer of deletes, named once. */
const EMPTY_OBJECT: JsonSchema = {
  title: 'Empty',
  type: 'object',
  description: 'Done; the body is an empty JSON object.',
  properties: {},
  examples: [{}],
};

function isEmptyObject(schema: unknown): boolean {
  const s = schema as { type?: unknown; properties?: Record<string, unknown> } | undefined;
  return s?.type === 'object' && Object.keys(s.properties ?? {}).length === 0;
}

function isErrorBody(schema: unknown): boolean {
  const s = schema as { type?: unknown; properties?: Record<string, unknown> } | undefined;
  return s?.type === 'object' && s.properties !== undefined && Object.keys(s.properties).join() === 'error';
}

/**
 * The route's declared answers, with every error answer as the shared hooks send it: 400 as the
 * route's fixed `text/plain` message or JSON `{"error"}`, 401 from authentication, 429 from the
 * rate limiter, 413/415 for bodies, 503 when the database is unreachable.
 */
export function documentedResponses(schema: FastifySchema, config: FastifyContextConfig): Record<string, unknown> {
  const declared = { ...((schema.response ?? {}) as Record<string, unknown>) };
  const takesInput = schema.body !== undefined || schema.params !== undefined || schema.querystring !== undefined;
  const out: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(declared)) {
    const [description, example] = DECLARED_ERRORS[status] ?? [`${status} error.`, 'Bad request'];
    if (Number(status) >= 400 && isErrorBody(response)) out[status] = jsonError(description, example);
    else out[status] = isEmptyObject(response) ? EMPTY_OBJECT : response;
  }
  if (takesInput || declared['400'] !== undefined) {
    out['400'] =
      config.plainText400 !== undefined
        ? plainTextError(plainTextMessages(declared['400'], config.plainText400))
        : jsonError('The request is invalid; `error` says why.', 'Invalid request: body must have required property');
  }
  if (config.auth === 'secret' || config.auth === 'client') {
    out['401'] = jsonError(
      'The project id or key is missing, unknown or revoked, or the operation needs the secret key.',
      'Invalid API key or project id',
    );
  }
  if (schema.body !== undefined) {
    out['413'] = jsonError('The body is over the size limit.', 'Request body is too large');
    out['415'] = jsonError('The body is not `application/json`.', 'Unsupported Media Type');
  }
  if (config.rateLimitClass !== undefined)
    out['429'] = jsonError("The project's rate limit for this class of request is spent.", 'Rate limit exceeded', true);
  if (config.auth === 'secret' || config.auth === 'client')
    out['503'] = jsonError(
      'The database is unreachable; retry after `Retry-After`.',
      'Database unavailable, retry later',
      true,
    );
  return out;
}
