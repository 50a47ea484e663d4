/**
 * Payload limits in bytes, per provider (docs/providers.md):
 * - FCM HTTP v1: 4,096 bytes of message content (everything but the token);
 * - APNs: 4,096 bytes of JSON payload (alert notifications);
 * - Web Push: one RFC 8291 aes128gcm record of at most 4,096 bytes, so 4,096 - 86 bytes of header
 *   (salt, record size, key id length, 65-byte key) - 16 bytes of tag - 1 padding delimiter = 3,993
 *   bytes of plaintext.
 */
export const FCM_MAX_PAYLOAD_BYTES = 4096;
export const APNS_MAX_PAYLOAD_BYTES = 4096;
export const WEBPUSH_MAX_RECORD_BYTES = 4096;
export const WEBPUSH_MAX_PLAINTEXT_BYTES = WEBPUSH_MAX_RECORD_BYTES - 86 - 16 - 1;

/** Bytes of an FCM message as Google counts them: the message without its `token`. */
export function fcmContentBytes(message: { message: Record<string, unknown> }): number {
  const { token: _token, ...content } = message.message;
  return Buffer.byteLength(JSON.stringify(content));
}
