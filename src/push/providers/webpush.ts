import webpush from 'web-push';
import type { Device } from '../../devices/devices.service.js';
import type { WebPushCredentials } from '../credentials/credentials.service.js';
import type { HttpsClient, HttpsResponse } from '../https-client.js';
import { WEBPUSH_MAX_PLAINTEXT_BYTES } from '../payload-limits.js';
import { DeliveryStatus, type AttemptResult, type PushMessage } from '../push.types.js';
import { attemptResultOf, parseJsonObject, retryAfterMsOf } from './attempt-failure.js';

const TTL_S = 28 * 24 * 3600;
/** A VAPID JWT may live up to 24 h; sign for 12 h and reuse it for one hour per push service origin. */
const VAPID_LIFETIME_S = 12 * 3600;
const VAPID_REUSE_MS = 3600_000;

/** The decrypted payload the service worker receives (JSON). */
export function webPushPayload(message: PushMessage, messageId: string): string {
  return JSON.stringify({
    title: message.title ?? '',
    body: message.body ?? '',
    ...(message.imageUrl ? { image: message.imageUrl } : {}),
    ...(message.landingUrl ? { url: message.landingUrl } : {}),
    message_id: messageId,
    data: message.data ?? {},
  });
}

/**
 * Web Push answers (RFC 8030 and the push services' documented codes; docs/providers.md). Only 404
 * and 410 are about the subscription; 400/401/403 are the services' answers to a VAPID header they
 * refuse, so they point at the project's keys or subject and leave the device alone.
 */
export function classifyWebPushResponse(response: HttpsResponse, now: number): AttemptResult {
  const status = response.status;
  const location = response.headers.location;
  if (status >= 200 && status < 300)
    return { status: DeliveryStatus.ACCEPTED, providerMessageId: typeof location === 'string' ? location : undefined };
  // Apple's service names the error (`{"reason": "BadJwtToken"}`); the others are known by status.
  const named = parseJsonObject(response.body).reason;
  const reason = typeof named === 'string' && /^[A-Za-z]{1,64}$/.test(named) ? named : `HTTP_${status}`;
  const retryAfterMs = retryAfterMsOf(response.headers['retry-after'], now);
  if (status === 404 || status === 410)
    return { status: DeliveryStatus.TOKEN_UNREGISTERED, reason, tokenAction: 'remove' };
  if (status === 400 || status === 401 || status === 403)
    return { status: DeliveryStatus.PROVIDER_AUTH_ERROR, reason, credentialProblem: `VAPID_REJECTED_${status}` };
  if (status === 413) return { status: DeliveryStatus.PAYLOAD_TOO_LARGE, reason };
  if (status === 429)
    return { status: DeliveryStatus.RATE_LIMITED, reason, retryable: true, retryAfterMs, quotaScope: 'device' };
  if (status >= 500) return { status: DeliveryStatus.FAILED, reason, retryable: true, retryAfterMs };
  return { status: DeliveryStatus.FAILED, reason };
}

/**
 * Web Push with the `web-push` library's RFC 8291 `aes128gcm` encryption and RFC 8292 VAPID headers,
 * sent over Herald's own keep-alive HTTPS client. The VAPID header is cached per origin.
 */
export class WebPushSender {
  private readonly vapid = new Map<string, { header: string; at: number }>();

  private readonly http: HttpsClient;
  private readonly now: () => number;
  constructor(http: HttpsClient, now: () => number) {
    this.http = http;
    this.now = now;
  }

  async send(
    creds: WebPushCredentials,
    device: Device,
    message: PushMessage,
    messageId: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<AttemptResult> {
    const keys = device.webPushKeys;
    if (!keys)
      return { status: DeliveryStatus.TOKEN_INVALID, reason: 'MISSING_SUBSCRIPTION_KEYS', tokenAction: 'disable' };
    const plaintext = webPushPayload(message, messageId);
    if (Buffer.byteLength(plaintext) > WEBPUSH_MAX_PLAINTEXT_BYTES)
      return { status: DeliveryStatus.PAYLOAD_TOO_LARGE, reason: 'PAYLOAD_TOO_LARGE' };
    let cipherText: Buffer;
    let authorization: string;
    try {
      cipherText = webpush.encrypt(keys.p256dh, keys.auth, plaintext, 'aes128gcm').cipherText;
    } catch {
      return { status: DeliveryStatus.TOKEN_INVALID, reason: 'INVALID_SUBSCRIPTION', tokenAction: 'disable' };
    }
    try {
      authorization = this.vapidHeader(creds, new URL(device.pushAddress).origin);
    } catch {
      return {
        status: DeliveryStatus.PROVIDER_AUTH_ERROR,
        reason: 'INVALID_VAPID_CREDENTIALS',
        credentialProblem: 'INVALID_VAPID_CREDENTIALS',
      };
    }
    try {
      const response = await this.http.request(device.pushAddress, {
        headers: {
          authorization,
          ttl: String(TTL_S),
          urgency: 'high',
          'content-encoding': 'aes128gcm',
          'content-type': 'application/octet-stream',
          'content-length': cipherText.length,
        },
        body: cipherText,
        timeoutMs,
        signal,
      });
      return classifyWebPushResponse(response, this.now());
    } catch (error) {
      return attemptResultOf(error);
    }
  }

  private vapidHeader(creds: WebPushCredentials, audience: string): string {
    const key = `${creds.fingerprint}|${audience}`;
    const now = this.now();
    const cached = this.vapid.get(key);
    if (cached && now - cached.at < VAPID_REUSE_MS) return cached.header;
    const expiration = Math.floor(now / 1000) + VAPID_LIFETIME_S;
    const header = webpush.getVapidHeaders(
      audience,
      creds.subject,
      creds.publicKey,
      creds.privateKey,
      'aes128gcm',
      expiration,
    ).Authorization;
    this.vapid.set(key, { header, at: now });
    return header;
  }
}
