import type { Device } from '../../devices/devices.service.js';
import type { FcmCredentials } from '../credentials/credentials.service.js';
import type { Http2Pool, Http2Response } from '../http2-pool.js';
import { DeliveryStatus, type AttemptResult, type PushMessage } from '../push.types.js';
import { attemptResultOf, parseJsonObject, retryAfterMsOf } from './attempt-failure.js';
import type { FcmTokenSource } from './fcm-auth.js';
import { splitBaseUrl } from './base-url.js';

/**
 * The FCM HTTP v1 message for one device. Mapping (documented in docs/decisions.md):
 * - `title`, `body`, `imageUrl` → `notification.title/body/image` (shown by the OS on every platform);
 * - `landingUrl` → `data.landing_url` (the app opens it on tap) and, when https, `webpush.fcm_options.link`;
 * - `imageUrl` also → `data.image_url`, and for iOS `apns.fcm_options.image` with `mutable-content: 1`;
 * - Herald's message id → `data.herald_message_id`; caller `data` is copied (string values).
 */
export function fcmMessage(token: string, message: PushMessage, messageId: string): object {
  const notification: Record<string, string> = {};
  if (message.title) notification.title = message.title;
  if (message.body) notification.body = message.body;
  if (message.imageUrl) notification.image = message.imageUrl;
  const data: Record<string, string> = { ...message.data, herald_message_id: messageId };
  if (message.landingUrl) data.landing_url = message.landingUrl;
  if (message.imageUrl) data.image_url = message.imageUrl;
  return {
    message: {
      token,
      ...(Object.keys(notification).length > 0 ? { notification } : {}),
      data,
      ...(message.landingUrl?.startsWith('https://') ? { webpush: { fcm_options: { link: message.landingUrl } } } : {}),
      ...(message.imageUrl ? { apns: { payload: { aps: { 'mutable-content': 1 } }, fcm_options: { image: message.imageUrl } } } : {}),
    },
  };
}

interface FcmErrorBody {
  code?: string;
  message: string;
  tokenField: boolean;
}

function fcmError(body: Record<string, unknown>): FcmErrorBody {
  const error = (typeof body.error === 'object' && body.error !== null ? body.error : {}) as Record<string, unknown>;
  const details = Array.isArray(error.details) ? (error.details as Array<Record<string, unknown>>) : [];
  const fcmCode = details.find((d) => typeof d.errorCode === 'string')?.errorCode as string | undefined;
  const violations = details.flatMap((d) => (Array.isArray(d.fieldViolations) ? (d.fieldViolations as Array<Record<string, unknown>>) : []));
  const message = typeof error.message === 'string' ? error.message : '';
  return {
    code: fcmCode ?? (typeof error.status === 'string' ? error.status : undefined),
    message,
    tokenField: violations.some((v) => v.field === 'message.token') || /registration token/i.test(message),
  };
}

/** Maps an FCM answer to R12 (error codes: firebase.google.com/docs/reference/fcm/rest/v1/ErrorCode). */
export function classifyFcmResponse(response: Http2Response, now: number, quotaExceededDelayMs: number): AttemptResult {
  const body = parseJsonObject(response.body);
  if (response.status === 200) return { status: DeliveryStatus.ACCEPTED, providerMessageId: typeof body.name === 'string' ? body.name : undefined };
  const error = fcmError(body);
  const reason = error.code ?? `HTTP_${response.status}`;
  const retryAfterMs = retryAfterMsOf(response.headers['retry-after'], now);
  switch (error.code) {
    case 'UNREGISTERED':
      return { status: DeliveryStatus.TOKEN_UNREGISTERED, reason, tokenAction: 'remove' };
    case 'SENDER_ID_MISMATCH':
      return { status: DeliveryStatus.TOKEN_INVALID, reason, tokenAction: 'disable' };
    case 'INVALID_ARGUMENT':
      return error.tokenField ? { status: DeliveryStatus.TOKEN_INVALID, reason, tokenAction: 'disable' } : { status: DeliveryStatus.INVALID_PAYLOAD, reason };
    case 'QUOTA_EXCEEDED':
      return { status: DeliveryStatus.RATE_LIMITED, reason, retryable: true, retryAfterMs, minDelayMs: quotaExceededDelayMs };
    case 'UNAVAILABLE':
    case 'INTERNAL':
      return { status: DeliveryStatus.FAILED, reason, retryable: true, retryAfterMs };
    case 'THIRD_PARTY_AUTH_ERROR':
      return { status: DeliveryStatus.PROVIDER_AUTH_ERROR, reason };
  }
  if (response.status === 401) return { status: DeliveryStatus.PROVIDER_AUTH_ERROR, reason, refreshAuth: true };
  if (response.status === 403) return { status: DeliveryStatus.PROVIDER_AUTH_ERROR, reason };
  if (response.status === 429) return { status: DeliveryStatus.RATE_LIMITED, reason, retryable: true, retryAfterMs };
  if (response.status >= 500) return { status: DeliveryStatus.FAILED, reason, retryable: true, retryAfterMs };
  if (response.status === 400) return { status: DeliveryStatus.INVALID_PAYLOAD, reason };
  return { status: DeliveryStatus.FAILED, reason };
}

export class FcmSender {
  private readonly origin: string;
  private readonly prefix: string;

  private readonly pool: Http2Pool;
  private readonly auth: FcmTokenSource;
  private readonly quotaExceededDelayMs: number;
  private readonly now: () => number;
  constructor(pool: Http2Pool, auth: FcmTokenSource, apiUrl: string, quotaExceededDelayMs: number, now: () => number) {
    this.pool = pool;
    this.auth = auth;
    this.quotaExceededDelayMs = quotaExceededDelayMs;
    this.now = now;
    ({ origin: this.origin, prefix: this.prefix } = splitBaseUrl(apiUrl));
  }

  async send(creds: FcmCredentials, device: Device, message: PushMessage, messageId: string, timeoutMs: number): Promise<AttemptResult> {
    try {
      const token = this.auth.cachedToken(creds) ?? (await this.auth.accessToken(creds));
      const response = await this.pool.request(
        this.origin,
        {
          ':path': `${this.prefix}/v1/projects/${encodeURIComponent(creds.projectId)}/messages:send`,
          authorization: `Bearer ${token}`,
          'content-type': 'application/json; charset=utf-8',
        },
        JSON.stringify(fcmMessage(device.pushAddress, message, messageId)),
        timeoutMs,
      );
      const result = classifyFcmResponse(response, this.now(), this.quotaExceededDelayMs);
      if (result.refreshAuth) this.auth.invalidate(creds, token);
      return result;
    } catch (error) {
      return attemptResultOf(error);
    }
  }
}
