import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { pinnedLookup, type OutboundTarget } from './outbound-url-policy.js';

/**
 * The one client for POSTs to tenant URLs: A2A callbacks (rule `a2a-webhooks`, src/a2a/push-configs) and
 * webhook notices (src/webhooks) both go through here, to an address the outbound-URL policy has already checked.
 */

/** Callbacks and webhooks may use plain http (rule `a2a-webhooks`); every other tenant URL is https only. */
export const POST_PROTOCOLS = ['http:', 'https:'] as const;
/** A POST is retried with backoff for this long after the change it describes (rule `a2a-webhooks`). */
export const POST_RETRY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** More attempts than the queue's backoff needs to span the window (about 17), which ends a POST first. */
export const POST_MAX_ATTEMPTS = 40;
export const POST_TIMEOUT_MS = 10_000;
/** A destination that does not accept a connection in this time is down (the attempt is retried). */
export const POST_CONNECT_TIMEOUT_MS = 3_000;

export interface OutboundPost {
  target: OutboundTarget;
  headers: Record<string, string>;
  body: string;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Keep-alive connections to `target` shared by several requests (`outboundAgent`); default one connection per request. */
  agent?: http.Agent;
}

/**
 * A keep-alive agent for several POSTs to one checked target: its sockets connect only to the
 * target's pinned address. The caller destroys it when done.
 */
export function outboundAgent(target: OutboundTarget, maxSockets: number): http.Agent {
  const options = { keepAlive: true, maxSockets, lookup: pinnedLookup(target) };
  return target.url.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
}

/**
 * POSTs once and resolves with the response status. Redirects are not followed (a 3xx is
 * just a status); the connection must open within 3 s and the whole exchange is bounded by
 * `timeoutMs` (default 10 s). It connects only to the address the policy checked, whatever the host
 * name resolves to now. Rejects on network errors and timeouts.
 */
export function postOutbound(request: OutboundPost): Promise<number> {
  const { target } = request;
  const client = target.url.protocol === 'https:' ? https : http;
  const host = target.url.hostname.replace(/^\[(.*)\]$/, '$1');
  const signals = [
    AbortSignal.timeout(request.timeoutMs ?? POST_TIMEOUT_MS),
    ...(request.signal ? [request.signal] : []),
  ];
  return new Promise((resolve, reject) => {
    const req = client.request(
      target.url,
      {
        method: 'POST',
        headers: { ...request.headers, 'content-length': Buffer.byteLength(request.body) },
        lookup: pinnedLookup(target),
        agent: request.agent ?? false,
        signal: AbortSignal.any(signals),
        // TLS still verifies the certificate against the URL's host name (SNI), not the pinned address.
        ...(target.url.protocol === 'https:' && !net.isIP(host) ? { servername: host } : {}),
      },
      (res) => {
        // Drain (bounded by the timeout) so the socket closes cleanly or is reused; the body is not used.
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.on('socket', (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(
        () => req.destroy(new Error(`no connection within ${POST_CONNECT_TIMEOUT_MS} ms`)),
        POST_CONNECT_TIMEOUT_MS,
      );
      socket.once('connect', () => clearTimeout(timer));
      socket.once('close', () => clearTimeout(timer));
    });
    req.end(request.body);
  });
}
