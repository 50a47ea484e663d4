import pino, { type DestinationStream, type LogFn, type Logger } from 'pino';
import { REDACTED, SECRET_HEADERS, SHOW_KEYS_ONCE, redactText } from './lib/redact.js';

/** What a component that only warns takes of a logger (the writes that share statements). */
export type WarnLog = { warn: LogFn };

/** Fields whose values are censored wherever the walk below meets them: credential headers and secret-named fields. */
const SECRET_KEYS = new Set([
  ...SECRET_HEADERS,
  'secret_key',
  'public_key',
  'api_key',
  'apikey',
  'password',
  'credentials',
  'private_key',
  'privatekey',
  'token',
]);

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (value === null || typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
};

/**
 * A log object with secret-named fields censored and every string (URLs, keys) redacted, down to
 * `depth` levels of plain objects. Bounded and plain-only, so a large or circular value (a socket,
 * a request) costs nothing; and done here rather than with pino's `redact` paths, whose wildcards
 * cost more than the rest of a request line together.
 */
function redactFields(object: Record<string | symbol, unknown>, depth = 2): Record<string, unknown> {
  if (object[SHOW_KEYS_ONCE] === true) return object;
  let out: Record<string, unknown> | undefined;
  for (const key in object) {
    const value = object[key];
    let next = value;
    if (value !== undefined && value !== null && SECRET_KEYS.has(key.toLowerCase())) next = REDACTED;
    else if (typeof value === 'string') next = redactText(value);
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

/**
 * Where the server's log goes, by LOG_FORMAT: `json` is pino's one object a line on stdout, for log
 * collectors; `pretty` is pino-pretty's readable lines (time, level, message, then the fields), for a
 * developer's terminal. pino-pretty is loaded only then, so a production process never carries it.
 */
export async function logDestination(format: 'json' | 'pretty'): Promise<DestinationStream | undefined> {
  if (format === 'json') return undefined;
  const { default: pretty } = await import('pino-pretty');
  return pretty({
    destination: 1,
    sync: true,
    colorize: process.stdout.isTTY === true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'service',
    singleLine: false,
  });
}
