import {
  APNS_MAX_PAYLOAD_BYTES,
  FCM_MAX_PAYLOAD_BYTES,
  fcmContentBytes,
  WEBPUSH_MAX_PLAINTEXT_BYTES,
} from './payload-limits.js';
import { apnsPayload } from './providers/apns.js';
import { fcmMessage } from './providers/fcm-body.js';
import { webPushPayload } from './providers/webpush.js';
import type { Provider, PushMessage } from './push.types.js';

/** A message id as long as a real one, for measuring. */
export const SAMPLE_MESSAGE_ID = '00000000-0000-7000-8000-000000000000';

export interface MeasuredPayload {
  provider: Provider;
  /** What the provider receives for one device (FCM: the message without the device's `token`, which FCM does not count). */
  payload: Record<string, unknown>;
  /** Bytes counted against `limit`, measured as the sender measures them before sending. */
  bytes: number;
  limit: number;
  fits: boolean;
}

/** The message as each provider's sender builds it, with its size against that provider's limit. */
export function measurePayloads(message: PushMessage, messageId = SAMPLE_MESSAGE_ID): MeasuredPayload[] {
  const fcm = fcmMessage('', message, messageId);
  const { token: _token, ...fcmContent } = fcm.message;
  const apns = apnsPayload(message, messageId) as Record<string, unknown>;
  const webpush = webPushPayload(message, messageId);
  const measured = (provider: Provider, payload: Record<string, unknown>, bytes: number, limit: number) => ({
    provider,
    payload,
    bytes,
    limit,
    fits: bytes <= limit,
  });
  return [
    measured('fcm', { message: fcmContent }, fcmContentBytes(fcm), FCM_MAX_PAYLOAD_BYTES),
    measured('apns', apns, Buffer.byteLength(JSON.stringify(apns)), APNS_MAX_PAYLOAD_BYTES),
    measured(
      'webpush',
      JSON.parse(webpush) as Record<string, unknown>,
      Buffer.byteLength(webpush),
      WEBPUSH_MAX_PLAINTEXT_BYTES,
    ),
  ];
}
