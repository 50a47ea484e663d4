/**
 * What went wrong, independent of transport. REST renders a kind as an HTTP status
 * (`http/error-handler.ts`); the agent interface as a JSON-RPC code (`a2a/errors.ts`).
 */
export type ErrorKind =
  | 'invalid' // the caller's input is wrong
  | 'unauthenticated' // missing, unknown, revoked or wrong kind of key
  | 'not_found'
  | 'conflict' // e.g. idempotency key in progress or reused with another body
  | 'refused' // understood but not allowed in the current state (campaign paused, not API-triggered)
  | 'forbidden' // this key may not do this (a public key on a project without identity verification)
  | 'rate_limited'
  | 'too_large'
  | 'too_expensive' // the database stopped the caller's read at the operator's statement timeout (a healthy database)
  | 'unavailable' // a dependency (database, provider) cannot be reached; retry later
  | 'internal';

export interface AppErrorOptions {
  details?: unknown;
  cause?: unknown;
  /** Seconds after which a retry may succeed (rate limits, outages). */
  retryAfterSeconds?: number;
}

/**
 * The one error type services throw. `code` is a stable UPPER_SNAKE reason (also sent to REST
 * callers as `X-Error-Reason` where a fixed message hides the cause, rule `error-bodies`).
 */
export class AppError extends Error {
  readonly details: unknown;
  readonly retryAfterSeconds: number | undefined;
  readonly kind: ErrorKind;
  readonly code: string;

  constructor(kind: ErrorKind, code: string, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.kind = kind;
    this.code = code;
    this.details = options.details;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

export const invalid = (code: string, message: string, details?: unknown): AppError =>
  new AppError('invalid', code, message, { details });
export const notFound = (code: string, message: string): AppError => new AppError('not_found', code, message);
