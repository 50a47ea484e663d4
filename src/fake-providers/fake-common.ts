import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import http2 from 'node:http2';
import type { AddressInfo, Server, Socket } from 'node:net';

export type FakeRequest = IncomingMessage | Http2ServerRequest;
export type FakeResponse = ServerResponse | Http2ServerResponse;

/**
 * Error injection by token prefix: `<fault>-[<n>-]<anything>`.
 * - `unregistered-`, `invalid-`, `mismatch-`, `payload-`, `auth-`, `forbidden-`: that answer, always;
 * - `quota-` (FCM: the device's rate), `projectquota-` (FCM: the project's rate), `unavailable-`, `internal-`,
 *   `reset-`: fail `n` times for this token, then succeed (no `n`: always);
 * - `sandbox-` (APNs): a development token: the sandbox accepts it, production answers `BadDeviceToken`;
 * - `slow-<ms>-`: answer after `ms` milliseconds (default 1000);
 * - `goaway-`: accept, then send GOAWAY on the connection (HTTP/2).
 */
export type Fault =
  | 'unregistered'
  | 'invalid'
  | 'mismatch'
  | 'payload'
  | 'auth'
  | 'forbidden'
  | 'quota'
  | 'projectquota'
  | 'unavailable'
  | 'internal'
  | 'reset'
  | 'slow'
  | 'goaway'
  | 'sandbox';
const FAULTS = new Set<string>([
  'unregistered',
  'invalid',
  'mismatch',
  'payload',
  'auth',
  'forbidden',
  'quota',
  'projectquota',
  'unavailable',
  'internal',
  'reset',
  'slow',
  'goaway',
  'sandbox',
]);

export interface Injection {
  fault: Fault;
  n: number | undefined;
}

export function injectionOf(token: string): Injection | undefined {
  const match = /^([a-z]+)-(?:(\d+)-)?/.exec(token);
  if (!match || !FAULTS.has(match[1]!)) return undefined;
  return { fault: match[1] as Fault, n: match[2] === undefined ? undefined : Number(match[2]) };
}

/**
 * A documented error by name, for the table in docs/providers.md: an address starting
 * `doc-<Name>-` (APNs: hex of it) is answered with that error, exactly as the provider documents it,
 * every time. Names are the providers' codes (`SENDER_ID_MISMATCH`, `TopicDisallowed`, `410`), with a
 * qualifier after a dot where one code has several documented forms (`QUOTA_EXCEEDED.device`).
 */
export function documentedErrorOf(token: string): string | undefined {
  return /^doc-([A-Za-z0-9_.]+)-/.exec(token)?.[1];
}

/** Counts failures per token so `unavailable-2-x` fails exactly twice. */
export class FailureCounter {
  private readonly hits = new Map<string, number>();

  /** Whether this request for `token` should fail (and counts it when so). */
  fails(token: string, injection: Injection): boolean {
    if (injection.n === undefined) return true;
    const hits = this.hits.get(token) ?? 0;
    if (hits >= injection.n) return false;
    this.hits.set(token, hits + 1);
    return true;
  }

  clear(): void {
    this.hits.clear();
  }
}

/** What a stand-in received, for tests (in process) and `GET /__fake/received` (across processes). */
export interface Received {
  token: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  status: number;
  at: number;
}

export class Recorder {
  /** Most recent requests (bounded); `total` counts all of them. */
  readonly items: Received[] = [];
  total = 0;
  accepted = 0;

  private readonly limit: number;
  constructor(limit = 50_000) {
    this.limit = limit;
  }

  add(item: Received): void {
    this.total++;
    if (item.status >= 200 && item.status < 300) this.accepted++;
    // Drop the oldest tenth at once: shifting one item at a time is O(n) per request.
    if (this.items.length >= this.limit) this.items.splice(0, Math.ceil(this.limit / 10));
    this.items.push(item);
  }

  clear(): void {
    this.items.length = 0;
    this.total = 0;
    this.accepted = 0;
  }
}

export function readBody(req: FakeRequest): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export function sendJson(res: FakeResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  (res as ServerResponse).writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  (res as ServerResponse).end(text);
}

/** Resets the stream (HTTP/2) or drops the connection (HTTP/1.1) without an answer. */
export function resetRequest(req: FakeRequest): void {
  if ('stream' in req) req.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
  else req.socket.destroy();
}

/** After the answer is written, ask the client to move to a new connection. */
export function goAwayAfter(req: FakeRequest): void {
  if ('stream' in req) setImmediate(() => req.stream.session?.goaway(http2.constants.NGHTTP2_NO_ERROR));
}

export function headersOf(req: FakeRequest): Record<string, string | string[] | undefined> {
  return { ...req.headers };
}

export async function listen(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return `https://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
}

/** Closes a server after dropping its open connections (HTTP/2 sessions and keep-alive sockets). */
export function closableServer(server: Server): () => Promise<void> {
  const sockets = new Set<Socket>();
  server.on('secureConnection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return () =>
    new Promise((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
}
