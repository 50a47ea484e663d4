import { Writable } from 'node:stream';
import pino, { type DestinationStream, type Logger } from 'pino';
import { logLines } from './processes.js';

/**
 * A logger whose output the test reads: `lines` as written (one per record), `records()` parsed,
 * `messages()` their `msg`. Plain pino at `debug` unless `make` builds another (the server's own
 * `createLogger`, to see what its redaction leaves).
 */
export function capturingLogger(
  make: (stream: DestinationStream) => Logger = (stream) => pino({ level: 'debug' }, stream),
) {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  const records = () => logLines(lines.join(''));
  return { logger: make(stream), lines, records, messages: () => records().map((r) => String(r.msg)) };
}
