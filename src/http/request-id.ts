import type { IncomingMessage } from 'node:http';
import { randomUUID } from 'node:crypto';

const SANE_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** Rule `request-id`: the caller's `X-Request-ID` when it is a sane token (<=128 printable chars), else a new one. */
export function requestIdFor(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID();
}
