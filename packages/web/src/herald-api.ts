/** The two calls @herald/web makes to Herald, both with the project's public key (docs/security.md). */
export interface HeraldConnection {
  baseUrl: string;
  projectId: string;
  publicKey: string;
  fetch: typeof fetch;
}

export interface WebPushSubscriptionJson {
  endpoint: string;
  expirationTime: number | null;
  keys: { p256dh: string; auth: string };
}

/** A refusal from Herald (or no answer): `status` 0 when the request did not complete. */
export class HeraldRequestError extends Error {
  readonly status: number;
  readonly reason: string | undefined;
  constructor(message: string, status: number, reason?: string) {
    super(message);
    this.name = 'HeraldRequestError';
    this.status = status;
    this.reason = reason;
  }
}

/** `url` without trailing slashes (a loop: `/\/+$/` is quadratic on a long run of slashes). */
function withoutTrailingSlashes(url: string): string {
  let end = url.length;
  while (end > 0 && url[end - 1] === '/') end--;
  return url.slice(0, end);
}

function urlOf(connection: HeraldConnection, path: string): string {
  return withoutTrailingSlashes(connection.baseUrl) + path;
}

async function call(connection: HeraldConnection, path: string, init: RequestInit): Promise<unknown> {
  const headers = new Headers(init.headers);
  headers.set('X-Service-Project-ID', connection.projectId);
  headers.set('X-Service-API-Key', connection.publicKey);
  let response: Response;
  try {
    response = await connection.fetch(urlOf(connection, path), { ...init, headers });
  } catch (error) {
    throw new HeraldRequestError(`Herald unreachable: ${(error as Error).message}`, 0);
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  if (!response.ok) {
    const message = (body as { error?: unknown } | undefined)?.error;
    throw new HeraldRequestError(
      `Herald answered ${response.status}: ${typeof message === 'string' ? message : text}`,
      response.status,
      response.headers.get('X-Error-Reason') ?? undefined,
    );
  }
  return body;
}

/** The project's VAPID public key (base64url), what `applicationServerKey` must be. */
export async function fetchVapidPublicKey(connection: HeraldConnection): Promise<string> {
  const body = await call(connection, '/api/v1/push-credentials/webpush/public-key', { method: 'GET' });
  const key = (body as { public_key?: unknown } | undefined)?.public_key;
  if (typeof key !== 'string' || key === '') throw new HeraldRequestError('Herald sent no VAPID public key', 200);
  return key;
}

/** Registers (or refreshes) this browser as a `web` device of `projectUserId`. */
export async function registerWebDevice(
  connection: HeraldConnection,
  input: { deviceId: string; projectUserId: string; subscription: WebPushSubscriptionJson; userToken?: string },
): Promise<void> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  if (input.userToken) headers['X-Service-User-Token'] = input.userToken;
  await call(connection, '/api/v1/devices', {
    method: 'POST',
    headers,
    body: JSON.stringify({
      device_id: input.deviceId,
      project_user_id: input.projectUserId,
      platform: 'web',
      web_push_subscription: input.subscription,
    }),
  });
}
