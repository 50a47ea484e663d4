/**
 * What must never reach a log line or an error message: URL userinfo, query strings (they carry
 * tokens as often as not) and API keys. The logger applies it once to every string of a line
 * (src/logger.ts); messages that echo a URL apply it themselves.
 *
 * One forward scan, no regular expression: a request path is attacker-controlled, and the
 * regexes this replaces backtracked quadratically (16 KB of slashes cost half a second).
 */
export const REDACTED = '[redacted]';

/**
 * The most of one string a log line carries: longer text is cut before it is scanned, and says how
 * much was cut. Room for a path with a 255-character id percent-encoded (about 3 KB) and for a
 * stack trace; a request line's URL may otherwise be up to Node's 16 KB header limit, which would
 * make every such request cost 16 KB of log.
 */
export const MAX_LOGGED_TEXT = 4096;

/** A URL (or a request path) with its userinfo and query string replaced. */
export function redactUrl(url: string): string {
  return redactText(url);
}

/**
 * Free text with every URL's userinfo and query string, and every API key, replaced; cut to
 * MAX_LOGGED_TEXT characters. Linear in the kept length.
 */
export function redactText(text: string): string {
  if (text.length <= MAX_LOGGED_TEXT) {
    if (!text.includes('svc_') && !text.includes('@') && !text.includes('?')) return text;
    return scan(text, false);
  }
  // Never leave half a surrogate pair at the cut.
  let end = MAX_LOGGED_TEXT;
  if (isHighSurrogate(text.charCodeAt(end - 1))) end -= 1;
  return `${scan(text.slice(0, end), true)}…[${text.length - end} more characters]`;
}

const SLASH = 0x2f;
const QUESTION = 0x3f;
const AT = 0x40;
const COLON = 0x3a;
const HASH = 0x23;
const KEY_PREFIX_LENGTH = 'svc_sk_'.length;

/**
 * The scan. Three things are replaced, each at the point where a left-to-right reader knows it:
 * - an API key: `svc_sk_` or `svc_pk_` starting a word, then its characters `[A-Za-z0-9_-]`;
 * - userinfo: after `scheme://`, everything up to the last `@` before the authority ends
 *   (whitespace, `/`, `?` or `#`); when the text was cut inside an authority, the authority;
 * - a query string: a `?` in a token (text between whitespace, `?`, `#` and quotes) that holds a
 *   `/` (a request path or a URL), up to whitespace, `#` or a quote.
 * Every character is read at most twice (an authority is looked ahead once, then read normally
 * when it holds no `@`), and lookaheads never overlap: an authority stops at the first `/`.
 */
function scan(text: string, cut: boolean): string {
  const length = text.length;
  let out = '';
  let copiedUpTo = 0;
  let slashInToken = false;
  let i = 0;
  while (i < length) {
    const c = text.charCodeAt(i);
    if (c === SLASH) {
      slashInToken = true;
      if (
        text.charCodeAt(i + 1) === SLASH &&
        text.charCodeAt(i - 1) === COLON &&
        isSchemeChar(text.charCodeAt(i - 2))
      ) {
        const start = i + 2;
        let end = start;
        let lastAt = -1;
        for (; end < length && !endsAuthority(text.charCodeAt(end)); end++)
          if (text.charCodeAt(end) === AT) lastAt = end;
        const hidden = lastAt >= 0 ? lastAt : cut && end === length && end > start ? end : -1;
        if (hidden >= 0) {
          out += text.slice(copiedUpTo, start) + REDACTED;
          copiedUpTo = i = hidden;
          continue;
        }
      }
      i++;
    } else if (c === QUESTION) {
      if (slashInToken) {
        const end = queryEnd(text, i + 1);
        out += text.slice(copiedUpTo, i + 1) + REDACTED;
        copiedUpTo = i = end;
        // Ended at the `@` of a URL inside the query: its host and path follow, still a URL.
        slashInToken = text.charCodeAt(end) === AT;
      } else {
        slashInToken = false;
        i++;
      }
    } else if (endsQuery(c)) {
      slashInToken = false;
      i++;
    } else if (c === 0x73 /* s */ && startsApiKey(text, i)) {
      let end = i + KEY_PREFIX_LENGTH;
      while (end < length && isKeyChar(text.charCodeAt(end))) end++;
      if (end > i + KEY_PREFIX_LENGTH) {
        out += text.slice(copiedUpTo, i + KEY_PREFIX_LENGTH) + REDACTED;
        copiedUpTo = end;
      }
      i = end;
    } else i++;
  }
  return copiedUpTo === 0 ? text : out + text.slice(copiedUpTo);
}

/**
 * Where the query string starting at `start` ends: at whitespace, `#` or a quote, except that a
 * URL inside it whose authority runs on past a quote (`?next=https://u"x@host`) is hidden up to
 * its `@` too, so no userinfo shows after the cut.
 */
function queryEnd(text: string, start: number): number {
  const length = text.length;
  let end = start;
  let inAuthority = false;
  while (end < length) {
    const c = text.charCodeAt(end);
    if (endsQuery(c)) break;
    if (c === SLASH && text.charCodeAt(end - 1) === COLON && text.charCodeAt(end + 1) === SLASH) {
      inAuthority = true;
      end += 2;
      continue;
    }
    if (c === SLASH || c === QUESTION) inAuthority = false;
    end++;
  }
  if (!inAuthority || end === length || isSpace(text.charCodeAt(end)) || text.charCodeAt(end) === HASH) return end;
  let lastAt = -1;
  for (let j = end; j < length && !endsAuthority(text.charCodeAt(j)); j++) if (text.charCodeAt(j) === AT) lastAt = j;
  return lastAt >= 0 ? lastAt : end;
}

/** `svc_sk_` or `svc_pk_` at `i`, not inside a word. */
function startsApiKey(text: string, i: number): boolean {
  if (i > 0 && isWordChar(text.charCodeAt(i - 1))) return false;
  if (!text.startsWith('svc_', i) || text.charCodeAt(i + 6) !== 0x5f /* _ */) return false;
  const kind = text.charCodeAt(i + 4);
  return (kind === 0x73 /* s */ || kind === 0x70) /* p */ && text.charCodeAt(i + 5) === 0x6b; /* k */
}

const isLetterOrDigit = (c: number): boolean =>
  (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39);
const isWordChar = (c: number): boolean => isLetterOrDigit(c) || c === 0x5f;
const isKeyChar = (c: number): boolean => isWordChar(c) || c === 0x2d;
/** A URL scheme's characters: letters, digits, `+`, `-`, `.`. */
const isSchemeChar = (c: number): boolean => isLetterOrDigit(c) || c === 0x2b || c === 0x2d || c === 0x2e;
const endsAuthority = (c: number): boolean => c === SLASH || c === QUESTION || c === HASH || isSpace(c);
/** Where a query string (and a token that may hold one) ends: whitespace, `#` or a quote. */
const endsQuery = (c: number): boolean => c === HASH || c === 0x22 || c === 0x27 || isSpace(c);
const isHighSurrogate = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;

/** JavaScript's `\s`: ASCII and Unicode spaces and line terminators. */
function isSpace(c: number): boolean {
  if (c <= 0x20) return c === 0x20 || (c >= 0x09 && c <= 0x0d);
  if (c < 0xa0) return false;
  return (
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
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
 * first start (rule `first-run`) because they are shown nowhere else.
 */
export const SHOW_KEYS_ONCE = Symbol('herald.showKeysOnce');
