import type { Device } from '../../devices/devices.service.js';
import type { ApnsCredentials } from '../credentials/credentials.service.js';
import type { Http2Pool, Http2Response } from '../http2-pool.js';
import { APNS_MAX_PAYLOAD_BYTES } from '../payload-limits.js';
import { DeliveryStatus, type AttemptResult, type PushMessage } from '../push.types.js';
import { apnsKeyOf, type ApnsTokenSource } from './apns-auth.js';
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

/** The project's APNs settings (topic, key, team) are at fault, not the device or the message. */
const CREDENTIAL_PROBLEMS = new Set([
  'DeviceTokenNotForTopic',
  'TopicDisallowed',
  'BadTopic',
  'MissingTopic',
  'ExpiredProviderToken',
  'InvalidProviderToken',
  'MissingProviderToken',
  'BadCertificate',
  'BadCertificateEnvironment',
  'Forbidden',
  'UnrelatedKeyIdInToken',
  'BadEnvironmentKeyIdInToken',
]);

/** Maps an APNs answer (developer.apple.com, "Handling notification responses from APNs"); docs/providers.md lists each reason. */
/** `tokenUpdatesBackoffMs`: after `TooManyProviderTokenUpdates` the token is kept and the send waits this long (a minute by default). */
export function classifyApnsResponse(
  response: Http2Response,
  now: number,
  tokenUpdatesBackoffMs = 60_000,
): AttemptResult {
  const headerId = response.headers['apns-id'];
  if (response.status === 200)
    return { status: DeliveryStatus.ACCEPTED, providerMessageId: typeof headerId === 'string' ? headerId : undefined };
  const body = parseJsonObject(response.body);
  const reason = typeof body.reason === 'string' ? body.reason : `HTTP_${response.status}`;
  const retryAfterMs = retryAfterMsOf(response.headers['retry-after'], now);
  if (response.status === 410) {
    const unregisteredAt = typeof body.timestamp === 'number' ? body.timestamp : undefined;
    return { status: DeliveryStatus.TOKEN_UNREGISTERED, reason, tokenAction: 'remove', unregisteredAt };
  }
  if (reason === 'BadDeviceToken') return { status: DeliveryStatus.TOKEN_INVALID, reason, tokenAction: 'disable' };
  if (reason === 'ExpiredProviderToken')
    return { status: DeliveryStatus.PROVIDER_AUTH_ERROR, reason, refreshAuth: true, credentialProblem: reason };
  if (CREDENTIAL_PROBLEMS.has(reason))
    return { status: DeliveryStatus.PROVIDER_AUTH_ERROR, reason, credentialProblem: reason };
  if (response.status === 413) return { status: DeliveryStatus.PAYLOAD_TOO_LARGE, reason };
  if (reason === 'TooManyProviderTokenUpdates')
    return {
      status: DeliveryStatus.RATE_LIMITED,
      reason,
      retryable: true,
      retryAfterMs,
      minDelayMs: tokenUpdatesBackoffMs,
      quotaScope: 'device',
    };
  // TooManyRequests: "too many requests for the same device token": that device backs off, nobody else.
  if (response.status === 429)
    return { status: DeliveryStatus.RATE_LIMITED, reason, retryable: true, retryAfterMs, quotaScope: 'device' };
  if (response.status >= 500 || reason === 'IdleTimeout')
    return { status: DeliveryStatus.FAILED, reason, retryable: true, retryAfterMs };
  if (response.status === 400) return { status: DeliveryStatus.INVALID_PAYLOAD, reason };
  return { status: DeliveryStatus.FAILED, reason };
}

type Environment = 'production' | 'sandbox';

export class ApnsSender {
  private readonly targets: Record<Environment, { origin: string; prefix: string }>;

  private readonly pool: Http2Pool;
  private readonly auth: ApnsTokenSource;
  private readonly now: () => number;
  private readonly tokenUpdatesBackoffMs: number;
  constructor(
    pool: Http2Pool,
    auth: ApnsTokenSource,
    urls: { production: string; sandbox: string },
    now: () => number,
    tokenUpdatesBackoffMs = 60_000,
  ) {
    this.pool = pool;
    this.auth = auth;
    this.now = now;
    this.tokenUpdatesBackoffMs = tokenUpdatesBackoffMs;
    this.targets = { production: splitBaseUrl(urls.production), sandbox: splitBaseUrl(urls.sandbox) };
  }

  async send(
    creds: ApnsCredentials,
    device: Device,
    message: PushMessage,
    messageId: string,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<AttemptResult> {
    const body = JSON.stringify(apnsPayload(message, messageId));
    if (Buffer.byteLength(body) > APNS_MAX_PAYLOAD_BYTES)
      return { status: DeliveryStatus.PAYLOAD_TOO_LARGE, reason: 'PAYLOAD_TOO_LARGE' };
    const environment: Environment = creds.sandbox ? 'sandbox' : 'production';
    const deadline = this.now() + timeoutMs;
    try {
      const jwt = await this.auth.token(creds);
      const result = await this.post(environment, creds, jwt, device, body, messageId, timeoutMs, signal);
      if (result.refreshAuth && !this.auth.invalidate(creds, jwt)) return { ...result, refreshAuth: false };
      if (result.reason !== 'BadDeviceToken') return result;
      // BadDeviceToken is the token's fault only in its own environment: a production token sent to
      // the sandbox (or the reverse) means the project's `sandbox` setting is wrong, not the device.
      const other: Environment = environment === 'sandbox' ? 'production' : 'sandbox';
      const probe = await this.post(
        other,
        creds,
        jwt,
        device,
        body,
        messageId,
        Math.max(1, deadline - this.now()),
        signal,
      );
      if (probe.reason === 'BadDeviceToken') return result;
      const problem = `APNS_ENVIRONMENT_MISMATCH: the device tokens belong to ${other}, the credentials say ${environment}`;
      if (probe.status === DeliveryStatus.ACCEPTED) return { ...probe, credentialProblem: problem };
      return { status: DeliveryStatus.PROVIDER_AUTH_ERROR, reason: 'BadDeviceToken', credentialProblem: problem };
    } catch (error) {
      return attemptResultOf(error);
    }
  }

  private async post(
    environment: Environment,
    creds: ApnsCredentials,
    jwt: string,
    device: Device,
    body: string,
    messageId: string,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<AttemptResult> {
    const target = this.targets[environment];
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
      body,
      timeoutMs,
      // Apple: every request on a connection carries tokens of one team; one pool per environment, team and key.
      `${environment}:${apnsKeyOf(creds)}`,
      signal,
    );
    return classifyApnsResponse(response, this.now(), this.tokenUpdatesBackoffMs);
  }
}
