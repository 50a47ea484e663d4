import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com, what Svix sends): a secret is
 * `whsec_` + base64 of random bytes; a message carries `webhook-id`, `webhook-timestamp` (unix
 * seconds) and `webhook-signature`: `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` keyed
 * with the decoded secret, one per valid secret, separated by spaces (so receivers keep verifying
 * through a rotation).
 */
export const SECRET_PREFIX = 'whsec_';
/** 32 random bytes: Standard Webhooks asks for 24 to 64. */
const SECRET_BYTES = 32;

export function newSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets
    .map((secret) => `v1,${createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest('base64')}`)
    .join(' ');
}

/** The three Standard Webhooks headers of one attempt; `nowMs` becomes the signed timestamp. */
export function standardWebhookHeaders(
  secrets: readonly string[],
  id: string,
  nowMs: number,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const timestamp = Math.floor(nowMs / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, id, timestamp, body),
  };
}
