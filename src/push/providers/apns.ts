import type { Device } from '../../devices/devices.service.js';
import type { ApnsCredentials } from '../credentials/credentials.service.js';
import type { Http2Pool, Http2Response } from '../http2-pool.js';
import { DeliveryStatus, type AttemptResult, type PushMessage } from '../push.types.js';
import type { ApnsTokenSource } from './apns-auth.js';
import { attemptResultOf, parseJsonObject, retryAfterMsOf } from './attempt-failure.js';
import { splitBaseUrl } from './base-url.js';

/** Kept as long as FCM's default TTL (four weeks), so both platforms hold a message alike. */
const EXPIRATION_S = 28 * 24 * 3600;

/**
 * The APNs payload: `aps.alert.title/body`; `mutable-content: 1` when there is an image (a
 * notification service extension downloads it); custom keys `image_url`, `landing_url`,
 * `herald_message_id` and the caller's `data` beside `aps`.
 */
export function apnsPayload(message: PushMessage, messageId: string): object {
  const alert: Record<string, string> = {};
  if (message.title) alert.title = message.title;
  if (message.body) alert.body = message.body;
  return {
    ...message.data,
    aps: { alert, ...(message.imageUrl ? { 'mutable-content': 1 } : {}) },
    herald_message_id: messageId,
    ...(message.imageUrl ? { image_url: message.imageUrl } : {}),
    ...(message.landingUrl ? { landing_url: message.landingUrl } : {}),
  };
}

const TOKEN_INVALID = new Set(['BadDeviceToken', 'DeviceTokenNotForTopic']);
/** Wrong or missing topic: the project's APNs settings are at fault, not the device or the message. */
const TOPIC_PROBLEMS = new Set(['BadTopic', 'MissingTopic', 'TopicDisallowed']);

/** Maps an APNs answer to R12 (reasons: developer.apple.com, "Handling notification responses from APNs"). */
export function classifyApnsResponse(response: Http2Response, now: number): AttemptResult {
  const headerId = response.headers['apns-id'];
  if (response.status === 200) return { status: DeliveryStatus.ACCEPTED, providerMessageId: typeof headerId === 'string' ? headerId : undefined };
  const body = parseJsonObject(response.body);
  const reason = typeof body.reason === 'string' ? body.reason : `HTTP_${response.status}`;
  const retryAfterMs = retryAfterMsOf(response.headers['retry-after'], now);
  if (response.status === 410) {
    const unregisteredAt = typeof body.timestamp === 'number' ? body.timestamp : undefined;
    return { status: DeliveryStatus.TOKEN_UNREGISTERED, reason, tokenAction: 'remove', unregisteredAt };
  }
  if (response.status === 400) {
    if (TOKEN_INVALID.has(reason)) return { status: DeliveryStatus.TOKEN_INVALID, reason, tokenAction: 'disable' };
    if (TOPIC_PROBLEMS.has(reason)) return { status: DeliveryStatus.PROVIDER_AUTH_ERROR, reason };
    return { status: DeliveryStatus.INVALID_PAYLOAD, reason };
  }
  if (response.status === 403) return { status: DeliveryStatus.PROVIDER_AUTH_ERROR, reason, refreshAuth: reason === 'ExpiredProviderToken' };
  if (response.status === 413) return { status: DeliveryStatus.INVALID_PAYLOAD, reason };
  if (response.status === 429) return { status: DeliveryStatus.RATE_LIMITED, reason, retryable: true, retryAfterMs };
  if (response.status >= 500) return { status: DeliveryStatus.FAILED, reason, retryable: true, retryAfterMs };
  return { status: DeliveryStatus.FAILED, reason };
}

export class ApnsSender {
  private readonly production: { origin: string; prefix: string };
  private readonly sandbox: { origin: string; prefix: string };

  private readonly pool: Http2Pool;
  private readonly auth: ApnsTokenSource;
  private readonly now: () => number;
  constructor(pool: Http2Pool, auth: ApnsTokenSource, urls: { production: string; sandbox: string }, now: () => number) {
    this.pool = pool;
    this.auth = auth;
    this.now = now;
    this.production = splitBaseUrl(urls.production);
    this.sandbox = splitBaseUrl(urls.sandbox);
  }

  async send(creds: ApnsCredentials, device: Device, message: PushMessage, messageId: string, timeoutMs: number): Promise<AttemptResult> {
    const target = creds.sandbox ? this.sandbox : this.production;
    try {
      const jwt = await this.auth.token(creds);
      const response = await this.pool.request(
        target.origin,
        {
          ':path': `${target.prefix}/3/device/${encodeURIComponent(device.pushAddress)}`,
          authorization: `bearer ${jwt}`,
          'apns-topic': creds.topic,
          'apns-push-type': 'alert',
          'apns-priority': '10',
          'apns-expiration': String(Math.floor(this.now() / 1000) + EXPIRATION_S),
          'apns-id': messageId,
          'content-type': 'application/json',
        },
        JSON.stringify(apnsPayload(message, messageId)),
        timeoutMs,
      );
      const result = classifyApnsResponse(response, this.now());
      if (result.refreshAuth) this.auth.invalidate(creds, jwt);
      return result;
    } catch (error) {
      return attemptResultOf(error);
    }
  }
}
