import type { Session } from './session.js';
import { readEventStream, type ServerEvent } from './sse.js';

/** A refusal from Herald, with its status, its message and its `X-Error-Reason`. */
export class ApiError extends Error {
  readonly status: number;
  readonly reason: string | null;
  constructor(status: number, message: string, reason: string | null) {
    super(message);
    this.status = status;
    this.reason = reason;
  }
}

/** Calls Herald's REST API as the signed-in project (headers only: the key is never in a URL). */
export class Api {
  private readonly session: Session;
  constructor(session: Session) {
    this.session = session;
  }

  private headers(json: boolean): Record<string, string> {
    return {
      'X-Service-Project-ID': this.session.projectId,
      'X-Service-API-Key': this.session.secretKey,
      ...(json ? { 'Content-Type': 'application/json' } : {}),
    };
  }

  async call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const response = await fetch(path, {
      method,
      headers: this.headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
      signal,
    });
    const text = await response.text();
    if (!response.ok)
      throw new ApiError(response.status, errorMessage(response.status, text), response.headers.get('X-Error-Reason'));
    return (text ? JSON.parse(text) : {}) as T;
  }

  get<T>(path: string, signal?: AbortSignal): Promise<T> {
    return this.call<T>('GET', path, undefined, signal);
  }

  /** Follows a server-sent event stream until it ends or `signal` aborts it. */
  async stream(path: string, onEvent: (event: ServerEvent) => void, signal: AbortSignal): Promise<void> {
    const response = await fetch(path, {
      headers: { ...this.headers(false), Accept: 'text/event-stream' },
      credentials: 'omit',
      cache: 'no-store',
      signal,
    });
    if (!response.ok || !response.body)
      throw new ApiError(
        response.status,
        errorMessage(response.status, await response.text()),
        response.headers.get('X-Error-Reason'),
      );
    await readEventStream(response.body, onEvent);
  }
}

function errorMessage(status: number, text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: unknown; message?: unknown };
    if (typeof parsed.error === 'string') return parsed.error;
    if (typeof parsed.message === 'string') return parsed.message;
  } catch {
    // Herald answers some 400s in plain text (the spec's format): that text is the message.
  }
  if (text.trim()) return text.trim();
  return status === 404 ? 'Not found' : `Herald answered ${status}`;
}

export const enc = encodeURIComponent;
