import { trimTrailing } from '../../lib/trim.js';

/** A provider base URL (`FCM_API_URL`, `APNS_API_URL`) as the origin to connect to and a path prefix. */
export function splitBaseUrl(url: string): { origin: string; prefix: string } {
  const parsed = new URL(url);
  return { origin: parsed.origin, prefix: trimTrailing(parsed.pathname, '/') };
}
