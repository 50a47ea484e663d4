/**
 * A Herald answer other than 2xx. `reason` is Herald's stable cause (`X-Error-Reason`: for
 * example `VALIDATION_FAILED`, `UNAUTHENTICATED`, `RATE_LIMITED`); `message` is the JSON
 * `{"error"}` text, or the fixed `text/plain` message some routes answer with.
 */
export class HeraldError extends Error {
  override readonly name = 'HeraldError';
  readonly status: number;
  readonly reason: string | undefined;
  /** `X-Request-ID`, to find the request in Herald's logs. */
  readonly requestId: string | undefined;
  /** Seconds from `Retry-After` (429, 503). */
  readonly retryAfterSeconds: number | undefined;
  /** The parsed JSON body, the text body, or undefined when empty. */
  readonly body: unknown;

  constructor(status: number, body: unknown, headers: Headers, method: string, url: string) {
    super(`${method} ${new URL(url).pathname}: ${status} ${messageOf(body)}`.trim());
    this.status = status;
    this.body = body;
    this.reason = headers.get('x-error-reason') ?? undefined;
    this.requestId = headers.get('x-request-id') ?? undefined;
    this.retryAfterSeconds = retryAfterMs(headers.get('retry-after'), Date.now()) / 1000 || undefined;
  }

  /** Reads the body of a failed response into a HeraldError. */
  static async from(request: Request, response: Response): Promise<HeraldError> {
    const text = await response.text();
    let body: unknown = text === '' ? undefined : text;
    if ((response.headers.get('content-type') ?? '').includes('json') && text !== '') {
      try {
        body = JSON.parse(text);
      } catch {
        // Kept as text: the error still says what came back.
      }
    }
    return new HeraldError(response.status, body, response.headers, request.method, request.url);
  }
}

function messageOf(body: unknown): string {
  if (typeof body === 'string') return body;
  if (typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string')
    return (body as { error: string }).error;
  return '';
}

/** `Retry-After` as milliseconds from `now`: delta-seconds or an HTTP date; 0 when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number {
  if (value === null || value.trim() === '') return 0;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? 0 : Math.max(0, date - now);
}
