import { isDatabaseUnavailable } from '../db/database-errors.js';
import { AppError, type ErrorKind } from '../errors.js';

/**
 * The ONE table of the agent interface's errors: JSON-RPC code and HTTP status per error (rule `a2a-errors`).
 * JSON-RPC errors travel with HTTP 200, except authentication (401), idempotency conflicts (409),
 * a wrong Content-Type (415), rate limits (429), an oversized body (413) and outages (503).
 * -32007 is Skill Not Found as rule `a2a-errors` says, although the public A2A spec gives -32007
 * to ExtendedAgentCardNotConfigured (docs/a2a.md lists the difference).
 */
export const RPC_ERRORS = {
  PARSE_ERROR: { code: -32700, http: 200, message: 'Invalid JSON payload' },
  INVALID_REQUEST: { code: -32600, http: 200, message: 'Request payload validation error' },
  METHOD_NOT_FOUND: { code: -32601, http: 200, message: 'Method not found' },
  INVALID_PARAMS: { code: -32602, http: 200, message: 'Invalid parameters' },
  INTERNAL_ERROR: { code: -32603, http: 200, message: 'Internal error' },
  TASK_NOT_FOUND: { code: -32001, http: 200, message: 'Task not found' },
  TASK_NOT_CANCELABLE: { code: -32002, http: 200, message: 'Task cannot be canceled' },
  PUSH_NOTIFICATION_NOT_SUPPORTED: { code: -32003, http: 200, message: 'Push notifications are not supported' },
  UNSUPPORTED_OPERATION: { code: -32004, http: 200, message: 'This operation is not supported' },
  CONTENT_TYPE_NOT_SUPPORTED: { code: -32005, http: 415, message: 'Content-Type must be application/json' },
  INVALID_AGENT_RESPONSE: { code: -32006, http: 200, message: 'Invalid agent response' },
  SKILL_NOT_FOUND: { code: -32007, http: 200, message: 'Skill not found' },
  VERSION_NOT_SUPPORTED: { code: -32009, http: 200, message: 'A2A protocol version not supported' },
  // Herald's own, in the JSON-RPC "server error" range A2A leaves free.
  UNAUTHENTICATED: { code: -32000, http: 401, message: 'Authentication failed' },
  RATE_LIMITED: { code: -32000, http: 429, message: 'Rate limit exceeded' },
} as const;

export type RpcErrorName = keyof typeof RPC_ERRORS;

/** Where a Herald error kind lands when its code is not a name of the table. */
const BY_KIND: Record<ErrorKind, { name: RpcErrorName; http?: number }> = {
  invalid: { name: 'INVALID_PARAMS' },
  unauthenticated: { name: 'UNAUTHENTICATED' },
  not_found: { name: 'TASK_NOT_FOUND' },
  conflict: { name: 'INTERNAL_ERROR', http: 409 }, // Rule `a2a-idempotency`: idempotency conflicts are HTTP 409 with -32603
  refused: { name: 'UNSUPPORTED_OPERATION' },
  forbidden: { name: 'UNSUPPORTED_OPERATION' },
  rate_limited: { name: 'RATE_LIMITED' },
  too_large: { name: 'INVALID_REQUEST', http: 413 },
  too_expensive: { name: 'INVALID_PARAMS' },
  unavailable: { name: 'INTERNAL_ERROR', http: 503 },
  internal: { name: 'INTERNAL_ERROR' },
};

export interface FieldViolation {
  field: string;
  description: string;
}

/** An error ready for either encoder: code, text safe to show, stable reason, HTTP status. */
export interface RpcError {
  code: number;
  message: string;
  /** UPPER_SNAKE reason (v1 `google.rpc.ErrorInfo.reason`). */
  reason: string;
  http: number;
  violations?: FieldViolation[];
  metadata?: Record<string, string>;
  retryAfterSeconds?: number;
}

const isName = (code: string): code is RpcErrorName => Object.hasOwn(RPC_ERRORS, code);

const KIND_OF: Partial<Record<RpcErrorName, ErrorKind>> = {
  UNAUTHENTICATED: 'unauthenticated',
  RATE_LIMITED: 'rate_limited',
  TASK_NOT_FOUND: 'not_found',
  SKILL_NOT_FOUND: 'not_found',
  INTERNAL_ERROR: 'internal',
  TASK_NOT_CANCELABLE: 'refused',
  UNSUPPORTED_OPERATION: 'refused',
};

/** Throws nothing; the a2a layer raises these as `AppError`s whose `code` is a table name. */
export function rpcError(
  name: RpcErrorName,
  message?: string,
  details?: { violations?: FieldViolation[]; metadata?: Record<string, string> },
): AppError {
  return new AppError(KIND_OF[name] ?? 'invalid', name, message ?? RPC_ERRORS[name].message, { details });
}

/** Renders any thrown value; unknown errors become -32603 without internal text. */
export function toRpcError(error: unknown): RpcError {
  if (error instanceof AppError) {
    const details = (error.details ?? {}) as { violations?: FieldViolation[]; metadata?: Record<string, string> };
    const entry = isName(error.code) ? { name: error.code, http: undefined } : BY_KIND[error.kind];
    const row = RPC_ERRORS[entry.name];
    const violations =
      details.violations ??
      (error.kind === 'invalid' && !isName(error.code) ? [{ field: 'params', description: error.message }] : undefined);
    return {
      code: row.code,
      message: error.kind === 'internal' && !isName(error.code) ? row.message : error.message,
      reason: error.code,
      http: entry.http ?? row.http,
      ...(violations ? { violations } : {}),
      ...(details.metadata ? { metadata: details.metadata } : {}),
      ...(error.retryAfterSeconds !== undefined ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
    };
  }
  if (isDatabaseUnavailable(error))
    return {
      code: -32603,
      message: 'Database unavailable, retry later',
      reason: 'DATABASE_UNAVAILABLE',
      http: 503,
      retryAfterSeconds: 5,
    };
  const status = (error as { statusCode?: unknown }).statusCode;
  if (status === 413)
    return { code: -32600, message: 'Request body is too large', reason: 'BODY_TOO_LARGE', http: 413 };
  return { code: -32603, message: RPC_ERRORS.INTERNAL_ERROR.message, reason: 'INTERNAL_ERROR', http: 200 };
}
