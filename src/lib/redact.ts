/**
 * What must never reach a log line or an error message: URL userinfo, query strings (they carry
 * tokens as often as not) and API keys. Used by the logger for every line and by messages that
 * echo a URL.
 */
export const REDACTED = '[redacted]';

const API_KEY = /\b(svc_(?:sk|pk)_)[A-Za-z0-9_-]+/g;
// scheme://user:pass@host → scheme://[redacted]@host (only up to the first / ? # or space)
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*@/gi;
// ?anything up to a fragment, a space or a quote, in absolute URLs and in request paths
const QUERY = /(\/[^\s?#"']*|:\/\/[^\s/?#"']+)\?[^\s#"']*/g;

/** A URL (or a request path) with its userinfo and query string replaced. */
export function redactUrl(url: string): string {
  return redactText(url);
}

/** Free text with every URL's userinfo and query string, and every API key, replaced. */
export function redactText(text: string): string {
  if (!text.includes('svc_') && !text.includes('@') && !text.includes('?')) return text;
  return text.replace(API_KEY, `$1${REDACTED}`).replace(USERINFO, `$1${REDACTED}@`).replace(QUERY, `$1?${REDACTED}`);
}

/** Header names whose values are credentials. */
export const SECRET_HEADERS = [
  'x-service-api-key',
  'x-api-key',
  'authorization',
  'proxy-authorization',
  'cookie',
  'x-a2a-token',
  'x-a2a-notification-token',
];

/**
 * Marks the one log line allowed to carry API keys: the default project's keys, printed once at
 * first start (G3) because they are shown nowhere else.
 */
export const SHOW_KEYS_ONCE = Symbol('herald.showKeysOnce');
