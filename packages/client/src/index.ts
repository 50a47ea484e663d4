import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { HeraldError, retryAfterMs } from './errors.js';
import type { components, paths } from './schema.js';

export { HeraldError } from './errors.js';
export type { components, operations, paths } from './schema.js';

/** Herald's named schemas: `Schemas['Campaign']`, `Schemas['CreateUserRequest']`, ... */
export type Schemas = components['schemas'];

export interface RetryOptions {
  /** Retries after the first attempt (default 3); 0 turns retrying off. */
  maxRetries?: number;
  /** First wait when the answer has no `Retry-After`, doubled on each retry (default 500 ms). */
  baseDelayMs?: number;
  /** A longer `Retry-After` is not waited for: the answer is returned (thrown) at once (default 30 s). */
  maxDelayMs?: number;
}

export interface HeraldClientOptions {
  /** Where Herald listens, e.g. `https://herald.example.com`. */
  baseUrl: string;
  /** `X-Service-Project-ID`. */
  projectId: string;
  /** `X-Service-API-Key`: the secret key on servers, the public key in apps and browsers. */
  apiKey: string;
  retry?: RetryOptions;
  /** Makes the `Idempotency-Key` of a mutation that has none (default: `crypto.randomUUID()`). */
  idempotencyKey?: () => string;
  /** The fetch to use (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
  /** Waits between retries (tests pass a fake; default: a timer). */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * The typed client: `herald.POST('/api/v1/messages:send', { body })` etc., with the paths, bodies
 * and answers of Herald's OpenAPI document. A call resolves with `{ data, response }` for a 2xx and
 * rejects with a {@link HeraldError} otherwise.
 */
export type HeraldClient = Client<paths>;

const MUTATIONS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Answers that say "try again later": rate limited, unavailable (database outage, shutdown). */
const RETRYABLE = new Set([429, 503]);

/** `url` without trailing slashes (a loop: `/\/+$/` is quadratic on a long run of slashes). */
function withoutTrailingSlashes(url: string): string {
  let end = url.length;
  while (end > 0 && url[end - 1] === '/') end--;
  return url.slice(0, end);
}

export function createHeraldClient(options: HeraldClientOptions): HeraldClient {
  const client = createClient<paths>({
    baseUrl: withoutTrailingSlashes(options.baseUrl),
    fetch: retryingFetch(options),
  });
  client.use(authentication(options), throwOnError);
  return client;
}

/** The keys on every request, and an `Idempotency-Key` on every mutation, kept across retries. */
function authentication(options: HeraldClientOptions): Middleware {
  const newKey = options.idempotencyKey ?? (() => crypto.randomUUID());
  return {
    onRequest({ request }) {
      request.headers.set('X-Service-Project-ID', options.projectId);
      request.headers.set('X-Service-API-Key', options.apiKey);
      if (MUTATIONS.has(request.method) && !request.headers.has('Idempotency-Key'))
        request.headers.set('Idempotency-Key', newKey());
      return request;
    },
  };
}

const throwOnError: Middleware = {
  async onResponse({ request, response }) {
    if (!response.ok) throw await HeraldError.from(request, response);
    return undefined;
  },
};

/**
 * Sends a request, and again on 429/503 (after `Retry-After`, else an exponential backoff with
 * jitter) and on network failures, up to `maxRetries`. Mutations carry one idempotency key for all
 * attempts, so a retry never acts twice.
 */
export function retryingFetch(options: HeraldClientOptions): (request: Request) => Promise<Response> {
  const send = options.fetch ?? ((request: Request) => fetch(request));
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const maxRetries = options.retry?.maxRetries ?? 3;
  const baseDelayMs = options.retry?.baseDelayMs ?? 500;
  const maxDelayMs = options.retry?.maxDelayMs ?? 30_000;
  const backoff = (attempt: number) => baseDelayMs * 2 ** attempt * (0.5 + Math.random() / 2);

  return async (request) => {
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= maxRetries;
      let response: Response;
      try {
        response = await send(request.clone());
      } catch (error) {
        if (last || request.signal.aborted || !(error instanceof TypeError)) throw error;
        await sleep(Math.min(maxDelayMs, backoff(attempt)));
        continue;
      }
      if (last || !RETRYABLE.has(response.status)) return response;
      const wait = retryAfterMs(response.headers.get('retry-after'), Date.now()) || backoff(attempt);
      if (wait > maxDelayMs) return response;
      await response.body?.cancel();
      await sleep(wait);
    }
  };
}
