import pino, { type DestinationStream, type Logger } from 'pino';
import { REDACTED, SECRET_HEADERS, SHOW_KEYS_ONCE, redactText } from './lib/redact.js';

const SECRET_FIELDS = ['secret_key', 'public_key', 'api_key', 'apiKey', 'password', 'credentials', 'private_key', 'privateKey', 'token'];

/** Censored wherever a log object carries them: header values, and fields named like a secret one level down. */
const REDACT_PATHS = [
  ...SECRET_HEADERS.flatMap((h) => [`headers["${h}"]`, `req.headers["${h}"]`, `*.headers["${h}"]`]),
  ...SECRET_FIELDS.map((f) => `*.${f}`),
];

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (value === null || typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
};

/**
 * String fields of a log object, and of plain objects down to `depth` levels, with URLs and keys
 * redacted. Bounded and plain-only, so a large or circular value (a socket, a request) costs nothing.
 */
function redactFields(object: Record<string | symbol, unknown>, depth = 2): Record<string, unknown> {
  if (object[SHOW_KEYS_ONCE] === true) return object;
  let out: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(object)) {
    let next = value;
    if (typeof value === 'string') next = redactText(value);
    else if (depth > 0 && isPlainObject(value)) next = redactFields(value, depth - 1);
    if (next !== value) (out ??= { ...object })[key] = next;
  }
  return out ?? object;
}

const errSerializer = (error: Error) => {
  const serialized = pino.stdSerializers.err(error);
  serialized.message = redactText(serialized.message);
  if (serialized.stack) serialized.stack = redactText(serialized.stack);
  return serialized;
};

/**
 * The process logger. URL userinfo and query strings, `svc_sk_`/`svc_pk_` keys and credential
 * headers never reach a line, whoever logs them (a request, an error message echoing a URL, a
 * driver's connection string).
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'herald' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      serializers: { err: errSerializer, error: errSerializer },
      formatters: { log: (object) => redactFields(object) },
      hooks: {
        logMethod(args, method) {
          const last = args.length - 1;
          if (typeof args[last] === 'string') args[last] = redactText(args[last]);
          method.apply(this, args);
        },
      },
    },
    destination,
  );
}
