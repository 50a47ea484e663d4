/** A failure below HTTP (connect, reset, GOAWAY, timeout): always worth a retry. */
export class TransportError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
    this.name = 'TransportError';
  }
}

/** The caller aborted the request (a worker's shutdown deadline): it may or may not have reached the provider. */
export const ABORTED = 'ABORTED';

/** Node's error codes for what happened on the wire, as stable `failure_reason` values. */
export const STABLE_CODES: Record<string, string> = {
  ERR_HTTP2_STREAM_ERROR: 'STREAM_RESET',
  ERR_HTTP2_STREAM_CANCEL: 'STREAM_CANCELLED',
  ERR_HTTP2_GOAWAY_SESSION: 'GOAWAY',
  ERR_HTTP2_SESSION_ERROR: 'SESSION_ERROR',
  ERR_HTTP2_INVALID_SESSION: 'SESSION_CLOSED',
};
